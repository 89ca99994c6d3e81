"""The turn a browser waits for is kept until a reload takes it back, marked if cut short."""

from __future__ import annotations

from collections.abc import Iterator

import gradio as gr

from assistant.web.in_flight import INTERRUPTED_NOTE, NOT_STARTED_NOTE, InFlight

KEY = ("0123456789abcdef", "anonymous")


def _updates(*texts: str) -> Iterator[list[gr.ChatMessage]]:
    for text in texts:
        yield [gr.ChatMessage(content=text)]


def test_a_finished_turn_comes_back_whole_and_only_once() -> None:
    kept = InFlight()
    assert [m[0].content for m in kept.recorded(KEY, "Q?", _updates("A", "AB"))] == ["A", "AB"]
    assert kept.take(KEY) == [
        {"role": "user", "content": "Q?"},
        {"role": "assistant", "content": "AB"},
    ]
    assert kept.take(KEY) == []


def test_a_turn_cut_short_comes_back_as_far_as_it_got_and_says_so() -> None:
    kept = InFlight()
    stream = kept.recorded(KEY, "Q?", _updates("A", "AB", "ABC"))
    next(stream)
    stream.close()  # what Gradio does when the page goes away
    assert kept.take(KEY) == [
        {"role": "user", "content": "Q?"},
        {"role": "assistant", "content": f"A\n\n{INTERRUPTED_NOTE}"},
    ]


def test_a_turn_with_no_answer_yet_keeps_its_question_and_asks_again() -> None:
    kept = InFlight()
    assert list(kept.recorded(KEY, "Q?", iter(()))) == []
    assert kept.take(KEY) == [
        {"role": "user", "content": "Q?"},
        {"role": "assistant", "content": NOT_STARTED_NOTE},
    ]


def test_a_saved_turn_is_forgotten_and_another_browser_gets_nothing() -> None:
    kept = InFlight()
    list(kept.recorded(KEY, "Q?", _updates("A")))
    assert kept.take(("another-browser-id", "anonymous")) == []
    kept.forget(KEY)
    assert kept.take(KEY) == []


def test_without_the_browser_cookie_nothing_is_kept() -> None:
    kept = InFlight()
    assert [m[0].content for m in kept.recorded(None, "Q?", _updates("A"))] == ["A"]
    assert kept.take(None) == []
