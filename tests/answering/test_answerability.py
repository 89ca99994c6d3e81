"""The offline answerability signals a reviewer reads, on hand-made answer units."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from assistant.answering.answerability import CALIBRATION_FILE, load_calibration, measure
from assistant.answering.ranking import Candidate, Ranked, focus_words, rank_units, weakest_word
from assistant.answering.units import AnswerUnit
from assistant.types import TokenVectors


def _ranked(
    question: str, units: list[tuple[str, tuple[str, ...]]], unknown: tuple[str, ...] = ()
) -> list[Ranked]:
    candidates = [
        Candidate(1, 1, AnswerUnit(text, "sentence", headings=headings, position=i))
        for i, (text, headings) in enumerate(units)
    ]
    return rank_units(question, candidates, embedder=None, unknown_words=unknown)


UNITS = [
    ("The maximum annual amount is $250 per teammate.", ("Benefits", "Mental health stipend")),
    ("You may join the 401(k) plan on your first day.", ("Benefits", "Retirement")),
    ("Sourcegraph pays the premiums for medical, dental and vision plans.", ("Benefits",)),
    ("Submit receipts for the stipend through the expense tool.", ("Benefits", "Stipends")),
]


def test_a_rare_topic_word_missing_from_the_best_unit_is_the_tell_of_a_near_miss() -> None:
    question = "What is the maximum annual stipend amount for mental health?"
    ranked = _ranked(question, UNITS)
    covered = measure(question, ranked, focus_words(question), (), doubted=False)

    near_miss = "What is the maximum annual dental amount?"
    ranked = _ranked(near_miss, UNITS)
    assert "dental" not in ranked[0].text
    missing = measure(near_miss, ranked, focus_words(near_miss), (), doubted=False)

    assert covered.key_missing == 0.0
    assert missing.key_missing > 0.5


def test_a_word_no_document_uses_is_as_missing_as_can_be() -> None:
    question = "Does Sourcegraph offer pet insurance?"
    ranked = _ranked(question, UNITS, unknown=("pet",))
    signals = measure(question, ranked, focus_words(question, ("pet",)), ("pet",), doubted=False)
    assert signals.key_missing == 1.0
    assert signals.unknown > 0


def test_the_best_unit_without_the_asked_kind_of_value_is_flagged() -> None:
    question = "What percentage of salary is the annual bonus?"
    ranked = _ranked(question, [("The annual bonus is paid in March.", ("Compensation",))])
    assert measure(question, ranked, focus_words(question), (), doubted=False).best_value_missing


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
