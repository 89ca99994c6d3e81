"""The conversations a browser keeps: per user, bounded, feedback ids kept (no browser)."""

from __future__ import annotations

import json
from typing import Any

from assistant.types import ANONYMOUS, User
from assistant.web.conversations import (
    MAX_CONVERSATIONS,
    MAX_SLOT_CHARS,
    clean_messages,
    cleared,
    opened,
    previous_choices,
    restored,
    saved,
    slot_of,
    started_new,
)

ANN, BOB = slot_of(User(name="ann")), slot_of(User(name="bob"))


def chat(question: str, answer: str = "12% a year [1].") -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"type": "text", "text": question}], "metadata": None},
        {"role": "assistant", "content": answer, "metadata": {"id": "audit:abc"}, "options": None},
        {"role": "assistant", "content": "**[1]** Loan Policy", "metadata": {"title": "Sources"}},
    ]


def test_a_saved_conversation_opens_again_with_its_record_id() -> None:
    store, first = saved(None, ANN, None, chat("Emergency loan rate?"), now=1.0)
    current, messages = opened(json.loads(json.dumps(store)), ANN)  # as the browser keeps it
    assert current == first
    assert messages[0] == {"role": "user", "content": "Emergency loan rate?", "metadata": None}
    assert messages[1]["metadata"] == {"id": "audit:abc"}  # a thumb still reaches its record
    assert messages[2]["metadata"] == {"title": "Sources"}
    assert "options" not in messages[1]


def test_new_chat_keeps_the_last_one_in_the_list_and_picking_it_restores_it() -> None:
    store, first = saved(None, ANN, None, chat("Emergency loan rate?"), now=1.0)
    store = started_new(store, ANN)
    assert opened(store, ANN) == (None, [])
    assert previous_choices(store, ANN, None) == [("Emergency loan rate?", first)]

    store, second = saved(store, ANN, None, chat("Annual leave days?"), now=2.0)
    assert second != first
    assert previous_choices(store, ANN, second) == [("Emergency loan rate?", first)]
    found = restored(store, ANN, first)
    assert found is not None
    store, current, messages = found
    assert current == first
    assert messages[0]["content"] == "Emergency loan rate?"
    assert previous_choices(store, ANN, current) == [("Annual leave days?", second)]
    assert opened(store, ANN)[0] == first  # what a reload opens


def test_each_user_sees_only_their_own_slot() -> None:
    store, ann_id = saved(None, ANN, None, chat("Ann's question"), now=1.0)
    store, bob_id = saved(store, BOB, None, chat("Bob's question"), now=2.0)
    assert opened(store, ANN)[1][0]["content"] == "Ann's question"
    assert opened(store, BOB)[1][0]["content"] == "Bob's question"
    assert restored(store, BOB, ann_id) is None  # Bob's page cannot open Ann's
    assert previous_choices(started_new(store, BOB), BOB, None) == [("Bob's question", bob_id)]
    assert opened(store, slot_of(ANONYMOUS)) == (None, [])
    assert "ann" not in ANN
    assert "ann" not in json.dumps(list(store["slots"]))


def test_a_stale_current_id_never_overwrites_another_conversation() -> None:
    store, first = saved(None, ANN, None, chat("First"), now=1.0)
    # Bob's id is unknown in Ann's slot: the history starts a new conversation.
    store, other = saved(store, ANN, "not-an-id", chat("Second"), now=2.0)
    assert other != first
    assert {label for label, _ in previous_choices(store, ANN, other)} == {"First"}


def test_clear_forgets_the_open_conversation_only() -> None:
    store, first = saved(None, ANN, None, chat("First"), now=1.0)
    store = started_new(store, ANN)
    store, second = saved(store, ANN, None, chat("Second"), now=2.0)
    store = cleared(store, ANN, second)
    assert opened(store, ANN) == (None, [])
    assert previous_choices(store, ANN, None) == [("First", first)]


def test_the_slot_keeps_the_newest_conversations_within_its_size() -> None:
    store: Any = None
    for number in range(MAX_CONVERSATIONS + 5):
        store, current = saved(store, ANN, None, chat(f"Question {number}"), now=float(number))
    listed = previous_choices(store, ANN, current)
    assert len(listed) == MAX_CONVERSATIONS - 1
    assert listed[0][0] == f"Question {MAX_CONVERSATIONS + 3}"  # newest first
    assert "Question 4" not in {label for label, _ in listed}

    long_answer = "x" * (MAX_SLOT_CHARS // 3)
    for number in range(5):
        store, current = saved(
            started_new(store, ANN),
            ANN,
            None,
            chat(f"Long {number}", long_answer),
            now=100.0 + number,
        )
    assert len(json.dumps(store["slots"][ANN])) <= MAX_SLOT_CHARS + 1000
    assert opened(store, ANN)[0] == current  # the open one is always kept


def test_malformed_storage_is_ignored() -> None:
    for junk in (None, "text", [1, 2], {"version": 99}, {"version": 1, "slots": {ANN: "x"}}):
        assert opened(junk, ANN) == (None, [])
        assert previous_choices(junk, ANN, None) == []
    broken = {"version": 1, "slots": {ANN: {"current": "a", "conversations": [{"id": 3}]}}}
    assert opened(broken, ANN) == (None, [])
    assert clean_messages([{"role": "system", "content": "x"}, {"role": "user"}, "junk"]) == []


def test_a_long_question_makes_a_short_title() -> None:
    store, _current = saved(None, ANN, None, chat("word " * 40), now=1.0)
    title = previous_choices(started_new(store, ANN), ANN, None)[0][0]
    assert len(title) <= 60
    assert title.endswith("…")
