"""The reader in the offline decision and ranking (a fake reader, hand-made weights)."""

from __future__ import annotations

from collections.abc import Sequence

from assistant.answering.answerability import Calibration, Model, load_calibration
from assistant.answering.extractive import HEDGE, NOTHING_FOUND, draft_extractive
from assistant.answering.ranking import Weights
from tests.support.hit_factory import make_hit

BEREAVEMENT = make_hit(
    1,
    "## Compassionate leave\n\nStaff may take up to three days of paid compassionate leave "
    "after the death of a family member or a companion animal.",
    heading_path=("Leave", "Compassionate leave"),
)
FURNITURE = make_hit(
    2,
    "## Home office\n\nEach employee may claim up to 500 EUR for home office furniture.",
    heading_path=("Equipment", "Home office"),
)
QUESTION = "My cat died last night and I'm really not okay. Can I take a day or two off?"


class KeywordReader:
    """Says a passage answers when it contains one of its words: a stand-in for the model."""

    def __init__(self, *words: str) -> None:
        self.words = words
        self.calls: list[int] = []

    @property
    def identity(self) -> str:
        return "reader:keyword:00000000"

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        self.calls.append(len(passages))
        return [0.95 if any(w in p.lower() for w in self.words) else 0.05 for p in passages]


def _reader_decides(threshold: float = 0.5, hedge: float = 0.5) -> Calibration:
    shipped = load_calibration()
    model = Model(("reader",), (0.5,), (0.25,), (4.0,), 0.0, threshold, hedge)
    return Calibration(shipped.with_meaning, shipped.words_only, None, with_reader=model)


def test_the_reader_answers_a_question_asked_in_everyday_words() -> None:
    reader = KeywordReader("compassionate")
    draft = draft_extractive(
        QUESTION, (BEREAVEMENT, FURNITURE), reader=reader, calibration=_reader_decides()
    )
    assert draft.covered
    assert "three days of paid compassionate leave" in draft.text
    assert reader.calls == [2]  # the passages only: units are read where the ranking weighs them


def test_the_reader_refuses_when_no_passage_answers() -> None:
    reader = KeywordReader("sabbatical")
    draft = draft_extractive(
        QUESTION, (BEREAVEMENT, FURNITURE), reader=reader, calibration=_reader_decides()
    )
    assert not draft.covered
    assert NOTHING_FOUND in draft.text


def test_an_unsure_reader_hedges_with_the_closest_passage() -> None:
    reader = KeywordReader("compassionate")
    calibration = _reader_decides(threshold=0.999999, hedge=0.5)
    draft = draft_extractive(
        QUESTION, (BEREAVEMENT, FURNITURE), reader=reader, calibration=calibration
    )
    assert draft.hedged
    assert HEDGE in draft.text
    assert "compassionate leave" in draft.text


def test_the_reader_picks_the_unit_that_answers_when_it_weighs() -> None:
    question = "Can I take time off after the death of my dog?"
    hits = (FURNITURE, BEREAVEMENT)
    plain = draft_extractive(question, hits, calibration=_reader_decides())
    assert "compassionate" in plain.passages[0].text
    # A reader that (wrongly) prefers the furniture budget moves it first once it weighs.
    reader = KeywordReader("500 eur")
    read = draft_extractive(
        question, hits, reader=reader, calibration=_reader_decides(), weights=Weights(reader=2.0)
    )
    assert "500 EUR" in read.passages[0].text
