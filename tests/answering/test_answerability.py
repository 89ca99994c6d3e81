"""The offline answerability signals a reviewer reads, on hand-made answer units."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from assistant.answering.answerability import (
    CALIBRATION_FILE,
    Calibration,
    Model,
    decide,
    load_calibration,
    measure,
    topic_asked,
)
from assistant.answering.ranking import Candidate, Ranked, focus_words, rank_units, weakest_word
from assistant.answering.units import AnswerUnit
from assistant.types import TokenVectors


def _ranked(
    question: str, units: Sequence[tuple[str, tuple[str, ...]]], unknown: tuple[str, ...] = ()
) -> list[Ranked]:
    candidates = [
        Candidate(1, 1, AnswerUnit(text, "sentence", headings=headings, position=i))
        for i, (text, headings) in enumerate(units)
    ]
    return rank_units(question, candidates, embedder=None, unknown_words=unknown)


UNITS: list[tuple[str, tuple[str, ...]]] = [
    ("Staff may read email on a personal phone after enrolling it.", ("Security", "Phones")),
    ("Members receive their bill by SMS each month.", ("Fees", "Billing")),
    ("The Sacco pays a phone bill allowance of KES 2,000 a month.", ("Staff", "Allowances")),
]


def _together(question: str, units: Sequence[tuple[str, tuple[str, ...]]]) -> float:
    ranked = _ranked(question, units)
    return measure(question, ranked, focus_words(question), (), doubted=False).together


def test_a_key_phrase_counts_only_where_its_words_stand_together() -> None:
    question = "Will the Sacco pay my phone bill?"
    assert _together(question, UNITS[:2]) < _together(question, UNITS)
    assert _together("Do staff get stock options?", [("Options on stock vest yearly.", ())]) == 1.0
    apart = [("Staff choose a payment option.", ("Stock", "Dividends"))]
    assert _together("Do staff get stock options?", apart) == 0.0


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        ("Do staff get stock options?", "stock options"),
        ("Will the Sacco pay my phone bill?", "phone bill"),
        ("Does the SACCO offer car insurance for members?", "car insurance"),
        ("Do we have a policy on car insurance for staff?", "car insurance"),
        # Not whether the organisation offers something: what I do, or one word.
        ("Can I get paid back for driving my own car?", ""),
        ("Will I pay extra if I repay early?", ""),
        ("Do members get a discount?", ""),
    ],
)
def test_a_question_whether_a_benefit_exists_names_its_topic(question: str, topic: str) -> None:
    assert topic_asked(question) == topic


def test_an_offered_thing_no_section_names_is_not_covered() -> None:
    question = "Do staff get stock options?"
    units = [
        ("Each member chooses how to receive their dividend.", ("Dividends", "Payment Options")),
        ("Managers plan leave so that each branch keeps enough staff.", ("Leave",)),
    ]
    ranked = _ranked(question, units)
    focus = focus_words(question)
    assert measure(question, ranked, focus, (), doubted=False).topic_missing == 1.0
    decision = decide(question, ranked, focus, (), doubted=False, with_meaning=False)
    assert not decision.covered
    assert "“stock options”" in decision.reason


def test_a_section_titled_by_the_rarest_word_of_the_offered_thing_is_about_it() -> None:
    question = "Does Sourcegraph match 401k contributions?"
    units = [
        ("Not at this time.", ("Benefits", "Does Sourcegraph match my 401k?")),
        ("Voluntary contributions continue while you are on leave.", ("Leave",)),
        ("Pension contributions follow local law.", ("Leave", "Outside the US")),
    ]
    ranked = _ranked(question, units)
    assert measure(question, ranked, focus_words(question), (), doubted=False).topic_missing == 0
    # Where the section is titled by the commoner word only, the thing is not named.
    units[0] = ("Not at this time.", ("Benefits", "Do you match contributions?"))
    ranked = _ranked(question, units)
    assert measure(question, ranked, focus_words(question), (), doubted=False).topic_missing == 1


def _vectors(*rows: list[float]) -> npt.NDArray[np.float32]:
    array = np.asarray(rows, dtype=np.float32)
    return np.asarray(array / np.linalg.norm(array, axis=1, keepdims=True), dtype=np.float32)


def test_the_weakest_word_is_the_question_word_no_piece_of_the_unit_matches() -> None:
    question = TokenVectors(("car", "ins", "##urance"), _vectors([1, 0, 0], [0, 1, 0], [0, 1, 0]))
    both = TokenVectors(("car", "insurance"), _vectors([1, 0, 0], [0, 1, 0]))
    cars_only = TokenVectors(("car", "loan"), _vectors([1, 0, 0], [0, 0, 1]))
    weak_both, weak_cars = weakest_word(question, [both, cars_only])
    assert weak_both == pytest.approx(1.0)
    assert weak_cars == pytest.approx(0.0, abs=1e-6)


def test_the_shipped_calibration_loads_and_names_only_known_signals() -> None:
    calibration = load_calibration(CALIBRATION_FILE)
    model = calibration.with_meaning
    assert "cosine" in model.names
    assert 0.0 < model.threshold < 1.0
    assert len(model.weights) == len(model.names) == len(model.means)


def _fixed(threshold: float, hedge: float) -> Calibration:
    """A calibration whose every model says p = 0.5, whatever the signals."""
    model = Model(("focus",), (0.0,), (1.0,), (0.0,), 0.0, threshold, hedge)
    return Calibration(with_meaning=model, words_only=model)


@pytest.mark.parametrize(
    ("threshold", "hedge", "covered", "hedged"),
    [(0.4, 0.3, True, False), (0.6, 0.4, False, True), (0.6, 0.55, False, False)],
)
def test_an_unsure_decision_hedges_inside_the_fitted_band_only(
    threshold: float, hedge: float, covered: bool, hedged: bool
) -> None:
    question = "Will the Sacco pay my phone bill?"
    ranked = _ranked(question, UNITS)
    decision = decide(
        question,
        ranked,
        focus_words(question),
        (),
        doubted=False,
        with_meaning=False,
        calibration=_fixed(threshold, hedge),
    )
    assert (decision.covered, decision.hedged) == (covered, hedged)


def test_a_decisive_check_refuses_without_a_hedge() -> None:
    question = "Do staff get stock options?"
    units = [("Each member chooses how to receive their dividend.", ("Payment Options",))]
    ranked = _ranked(question, units)
    decision = decide(
        question,
        ranked,
        focus_words(question),
        (),
        doubted=False,
        with_meaning=False,
        calibration=_fixed(0.4, 0.1),
    )
    assert not decision.covered
    assert not decision.hedged
    assert "“stock options”" in decision.reason


def test_a_calibration_without_a_band_never_hedges() -> None:
    model = load_calibration(CALIBRATION_FILE).with_meaning
    assert model.hedge <= model.threshold
