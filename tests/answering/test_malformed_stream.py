"""A malformed or failing model stream ends the answer, never the session (D7)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from assistant.answering.rewrite import Rewrite
from assistant.answering.service import STREAM_FAILED, AnswerRun
from assistant.types import SearchResult
from tests.support.model_chat import LEAVE, OWN, chat_over, final_messages, is_sources
from tests.support.openai_server import FakeOpenAIServer, Reply

GOOD = b'{"choices":[{"index":0,"delta":{"content":"Staff get 25 days [1]. "}}]}'


MALFORMED = {
    "invalid JSON": (b"{not json",),
    "invalid UTF-8": (b'{"choices":[{"delta":{"content":"\xff\xfe"}}]}',),
    "list content": (b'{"choices":[{"delta":{"content":["a"]}}]}',),
    "dict content": (b'{"choices":[{"delta":{"content":{"a":1}}}]}',),
    "number content": (b'{"choices":[{"delta":{"content":5}}]}',),
    "null delta": (b'{"choices":[{"delta":null}]}',),
    "string delta": (b'{"choices":[{"delta":"abc"}]}',),
    "missing choices": (b'{"id":"x"}',),
    "null choices": (b'{"choices":null}',),
    "choices a string": (b'{"choices":"abc"}',),
    "choice a number": (b'{"choices":[5]}',),
    "a bare number": (b"5",),
    "null": (b"null",),
    "a list": (b"[1,2]",),
    "lone surrogate": (b'{"choices":[{"delta":{"content":"x\\udcff y "}}]}',),
    "split surrogate pair": (
        b'{"choices":[{"delta":{"content":"smile \\ud83d"}}]}',
        b'{"choices":[{"delta":{"content":"\\ude00 done. "}}]}',
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_stream_never_breaks_the_chat_or_the_session(case: str) -> None:
    """D7: raw SSE bytes from the server; the answer keeps its text and Sources, the
    shown text is valid Unicode, and the same session's next question works."""
    first = Reply(text="and more [1].", raw=(GOOD, *MALFORMED[case], GOOD))
    with FakeOpenAIServer((first,), default=Reply(text="Leave is 25 days [1].")) as server:
        respond = chat_over(server)
        messages = final_messages(respond, "How much annual leave?")
        body = messages[0].content
        body.encode("utf-8")  # valid Unicode: no lone surrogate reaches Gradio
        assert "Staff get 25 days" in body
        assert any(is_sources(m) for m in messages)
        if case == "split surrogate pair":
            assert "smile 😀 done." in body
        history = [
            {"role": "user", "content": "How much annual leave?"},
            {"role": "assistant", "content": body},
        ]
        again = final_messages(respond, "And next year?", history)
        assert "Leave is 25 days" in again[0].content
        sent = json.dumps(server.requests[1]["messages"], ensure_ascii=False)
        sent.encode("utf-8")  # the prompt of the next question is valid Unicode


def test_a_producer_failure_of_any_kind_ends_the_answer_with_a_note() -> None:
    """D7: even an error that is no LLMError stays inside the answer run."""

    def broken() -> Iterator[str]:
        yield "Staff get 25 days [1]. "
        raise RuntimeError("boom")

    run = AnswerRun(
        question="q",
        rewrite=Rewrite("q", "none"),
        result=SearchResult("q", (LEAVE,), False),
        prompt=None,
        produce=broken,
        allowed_hosts=OWN,
        mode="model",
        started=time.perf_counter(),
        retrieval_ms=0.0,
    )
    assert "".join(run) == "Staff get 25 days [1]. "
    assert run.error == STREAM_FAILED
