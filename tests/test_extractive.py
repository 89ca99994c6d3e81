"""The offline answer mode quotes the best sentences and table rows, with citations."""

from __future__ import annotations

from assistant.answering.citations import check_answer
from assistant.answering.extractive import (
    EXTRACTIVE_LABEL,
    NOTHING_FOUND,
    extract_passages,
    stream_extractive,
)
from tests.hit_factory import make_hit

LEAVE = make_hit(
    1,
    "## Annual leave\n\nFull-time members receive 25 days of annual leave per year. "
    "The office closes on public holidays. Requests go to your line manager.",
)
LIMITS = make_hit(
    2,
    "Limits apply per trip.\n\n| Item | Limit |\n|---|---|\n| Hotel | 150 EUR per night |\n"
    "| Taxi | 40 EUR per ride |",
    title="Travel",
    heading_path=("Travel", "Limits"),
)


def test_best_sentence_quoted_with_its_citation() -> None:
    text = "".join(stream_extractive("How many days of annual leave?", (LEAVE, LIMITS)))
    assert text.startswith(EXTRACTIVE_LABEL)
    assert "> Full-time members receive 25 days of annual leave per year. [1]" in text
    assert "public holidays" not in text


def test_table_row_kept_whole_with_its_header() -> None:
    passages = extract_passages("What is the hotel limit per night?", (LEAVE, LIMITS))
    rows = [p for p in passages if p.is_table]
    assert rows[0].text == "| Item | Limit |\n|---|---|\n| Hotel | 150 EUR per night |"
    assert rows[0].number == 2
    text = "".join(stream_extractive("What is the hotel limit per night?", (LEAVE, LIMITS)))
    assert "From [2]:\n\n| Item | Limit |\n|---|---|\n| Hotel | 150 EUR per night |" in text


def test_streams_in_small_deltas() -> None:
    deltas = list(stream_extractive("annual leave days", (LEAVE,)))
    assert len(deltas) > 10
    assert max(len(d) for d in deltas) < 30


def test_nothing_matching_says_so() -> None:
    text = "".join(stream_extractive("quantum chromodynamics", (LEAVE,)))
    assert NOTHING_FOUND in text
    assert "[1]" not in text


def test_extractive_answers_pass_the_citation_check() -> None:
    question = "How many days of annual leave, and what is the hotel limit?"
    text = "".join(stream_extractive(question, (LEAVE, LIMITS)))
    answer = check_answer(question, text, (LEAVE, LIMITS), offline=True)
    assert {c.number for c in answer.citations} == {1, 2}
    assert answer.invalid_citation_numbers == ()
    assert answer.unsupported_sentences == ()


def test_at_most_four_passages_in_source_order() -> None:
    body = " ".join(f"Rule {i} says annual leave is granted." for i in range(10))
    passages = extract_passages("annual leave", (make_hit(1, body), make_hit(2, body)))
    assert len(passages) == 4
    assert [(p.number, p.position) for p in passages] == sorted(
        (p.number, p.position) for p in passages
    )
