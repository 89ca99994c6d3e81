"""A short follow-up gets its own subject and keeps only the previous question's frame."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from assistant.answering.rewrite import QueryRewriter
from assistant.answering.subjects import gibberish
from assistant.types import Turn
from tests.support.paths import ROOT

CASES = ROOT / "data" / "eval" / "short_follow_ups.jsonl"


def _query(history: Sequence[str], question: str) -> str:
    turns = [t for q in history for t in (Turn("user", q), Turn("assistant", "…"))]
    return QueryRewriter().rewrite(question, turns).query


@pytest.mark.parametrize(
    ("previous", "follow_up", "has", "lacks"),
    [
        (
            "What is the per diem for an overnight trip to Mombasa?",
            "and for Kisumu?",
            ("diem", "overnight", "Kisumu"),
            ("Mombasa",),
        ),
        (
            "How many days of sick leave can I take?",
            "what about maternity?",
            ("maternity", "leave"),
            ("sick",),
        ),
        (
            "What should I do if my laptop is stolen?",
            "and my phone?",
            ("stolen", "phone"),
            ("laptop",),
        ),
        ("How long is maternity leave?", "What about for interns?", ("maternity", "interns"), ()),
        ("asdkj qwpoe zxmv?", "leave", ("leave",), ("asdkj", "qwpoe", "zxmv")),
    ],
)
def test_the_follow_up_replaces_the_subject_it_stands_for(
    previous: str, follow_up: str, has: Sequence[str], lacks: Sequence[str]
) -> None:
    query = _query([previous], follow_up)
    assert all(word in query for word in has), query
    assert not any(word in query for word in lacks), query


def test_a_gibberish_question_carries_nothing_and_a_real_one_is_no_gibberish() -> None:
    assert gibberish("asdkj qwpoe zxmv")
    assert not gibberish("What is the SSH port for the ICT VPN?")
    assert not gibberish("How long are strengths assessments kept?")
    assert QueryRewriter().rewrite("leave", [Turn("user", "asdkj qwpoe")]).query == "leave"


def test_most_short_follow_ups_of_the_set_are_rewritten_right() -> None:
    # 33 / 64 before issue 39 (the old subject stayed in the query), 57 / 64 after.
    cases = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines()]
    right = 0
    for case in cases:
        query = _query(case["history"], case["question"]).lower()
        right += all(w.lower() in query for w in case["keeps"]) and not any(
            w.lower() in query for w in case["drops"]
        )
    assert len(cases) == 64
    assert right >= 57
