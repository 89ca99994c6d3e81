"""Follow-up questions become standalone queries; self-contained ones pass through."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from assistant.answering.rewrite import QueryRewriter, needs_rewrite
from assistant.errors import LLMError
from assistant.types import Turn

HISTORY = (
    Turn("user", "How many days of annual leave do full-time members get?"),
    Turn("assistant", "25 days [1]."),
)


@pytest.mark.parametrize(
    "question",
    [
        "and for members under 6 months?",
        "What about that?",
        "Does it apply to interns?",
        "Part-time?",
    ],
)
def test_follow_ups_detected(question: str) -> None:
    assert needs_rewrite(question, HISTORY)


@pytest.mark.parametrize(
    "question",
    ["How is sick leave reported to the line manager?", "What is the hotel limit per night?"],
)
def test_self_contained_questions_pass_through(question: str) -> None:
    rewrite = QueryRewriter().rewrite(question, HISTORY)
    assert rewrite.query == question
    assert not rewrite.rewritten


def test_no_rewrite_without_an_earlier_user_turn() -> None:
    assert QueryRewriter().rewrite("And for interns?", ()).query == "And for interns?"


def test_heuristic_combines_previous_question() -> None:
    rewrite = QueryRewriter().rewrite("and for members under 6 months?", HISTORY)
    assert rewrite.method == "heuristic"
    # "members" is named anew, so its old modifier "full-time" goes too.
    assert rewrite.query == "many days annual leave get for members under 6 months"


def test_heuristic_replaces_the_old_subject() -> None:
    history = (Turn("user", "What is the emergency loan interest rate?"),)
    rewrite = QueryRewriter().rewrite("and for development loans?", history)
    assert rewrite.query == "interest rate for development loans"


class ScriptedCompleter:
    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply
        self.seen: list[Sequence[dict[str, str]]] = []

    def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int = 96) -> str:
        self.seen.append(messages)
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def test_model_rewrite_used_and_given_the_conversation() -> None:
    completer = ScriptedCompleter("annual leave for members in their first 6 months")
    rewrite = QueryRewriter(completer=completer).rewrite("And under 6 months?", HISTORY)
    assert rewrite.query == "annual leave for members in their first 6 months"
    assert rewrite.method == "llm"
    assert completer.seen[0][-1] == {"role": "user", "content": "And under 6 months?"}
    assert HISTORY[0].text in str(completer.seen[0])


def test_model_failure_falls_back_to_heuristic() -> None:
    completer = ScriptedCompleter(LLMError("down"))
    rewrite = QueryRewriter(completer=completer).rewrite("And under 6 months?", HISTORY)
    assert rewrite.method == "heuristic"
    assert "annual" in rewrite.query
