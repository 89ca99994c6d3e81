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


def test_every_follow_up_opening_is_dropped() -> None:
    history = (Turn("user", "How much can I borrow as an emergency loan?"),)
    query = QueryRewriter().rewrite("and what about for members under 6 months?", history).query
    assert query == "much borrow emergency loan for members under 6 months"


@pytest.mark.parametrize(
    ("previous", "follow_up", "expected"),
    [
        (
            "How many days of annual leave do full-time staff get?",
            "and for part-time staff?",
            "many days annual leave get for part-time staff",
        ),
        (
            "What is the interest rate on a development loan?",
            "what about emergency loans?",
            "interest rate emergency loans",
        ),
    ],
)
def test_fragment_keeps_the_previous_topic(previous: str, follow_up: str, expected: str) -> None:
    assert QueryRewriter().rewrite(follow_up, (Turn("user", previous),)).query == expected


def test_a_chain_of_fragments_keeps_the_first_topic() -> None:
    # Each fragment used to be combined with the fragment before it only.
    history = (
        Turn("user", "What is the emergency loan interest rate?"),
        Turn("assistant", "12% per annum [1]."),
        Turn("user", "and for development loans?"),
        Turn("assistant", "14% per annum [1]."),
    )
    query = QueryRewriter().rewrite("what about for members under 6 months?", history).query
    assert query == "interest rate development loans for members under 6 months"


LEAVE_TALK = (
    Turn("user", "How much paternity leave do fathers get?"),
    Turn("assistant", "Two weeks [1]."),
    Turn("user", "and if we adopt?"),
    Turn("assistant", "The same [1]."),
)


@pytest.mark.parametrize(
    "question",
    [
        "Can staff bring their dogs to the office?",
        "Is there a gym subsidy?",
        "Do we have a policy on car insurance for staff?",
    ],
)
def test_a_question_naming_its_own_topic_is_never_merged(question: str) -> None:
    rewrite = QueryRewriter().rewrite(question, LEAVE_TALK)
    assert rewrite.query == question
    assert "paternity" not in rewrite.query


@pytest.mark.parametrize(
    ("question", "added"),
    [
        ("What about for interns?", ("interns",)),
        ("Does it roll over to next year?", ("roll", "next", "year")),
        ("Do they get it too if they work part-time?", ("work", "part-time")),
    ],
)
def test_a_real_follow_up_keeps_the_topic_and_adds_its_constraint(
    question: str, added: tuple[str, ...]
) -> None:
    rewrite = QueryRewriter().rewrite(question, LEAVE_TALK)
    assert "paternity leave" in rewrite.query
    assert set(added) <= set(rewrite.added)
