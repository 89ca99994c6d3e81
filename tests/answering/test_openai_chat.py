"""OpenAIChat with the real openai client against a real local HTTP server."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from assistant.answering.llm import OpenAIChat
from assistant.config import LLMSettings
from assistant.errors import LLMError
from tests.support.openai_server import FakeOpenAIServer, Reply

MESSAGES = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"})


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def make_chat(server: FakeOpenAIServer, *, timeout: float = 5.0, retries: int = 2) -> OpenAIChat:
    settings = LLMSettings(base_url=server.base_url, model="fake-model", timeout=timeout)
    return OpenAIChat(settings, max_retries=retries)


def drain(stream: Iterator[str], into: list[str]) -> None:
    for delta in stream:
        into.append(delta)


def test_streams_text_in_several_deltas(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(text="Annual leave is 25 days [1].", chunk_chars=4))
    deltas = list(make_chat(server).stream(MESSAGES))
    assert "".join(deltas) == "Annual leave is 25 days [1]."
    assert len(deltas) > 3
    assert all(deltas)
    body = server.requests[0]
    assert body["stream"] is True
    assert body["model"] == "fake-model"
    assert body["messages"] == list(MESSAGES)


def test_no_request_until_iterated(server: FakeOpenAIServer) -> None:
    chat = make_chat(server)
    chat.stream(MESSAGES)
    assert server.requests == []


def test_usage_chunk_with_empty_choices_is_skipped(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(text="Yes.", usage_chunk=True))
    assert "".join(make_chat(server).stream(MESSAGES)) == "Yes."
    assert server.streams[0].completed.wait(2)


def test_rate_limit_retried_then_reported_with_retry_after(server: FakeOpenAIServer) -> None:
    server.enqueue(*[Reply(fault="rate_limit", retry_after="1")] * 3)
    with pytest.raises(LLMError, match=r"rate limited.*Retry after 1 seconds"):
        list(make_chat(server, retries=1).stream(MESSAGES))
    assert len(server.requests) == 2


def test_rate_limit_then_success_is_transparent(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(fault="rate_limit", retry_after="0"), Reply(text="Fine."))
    assert "".join(make_chat(server).stream(MESSAGES)) == "Fine."
    assert len(server.requests) == 2


def test_server_error_reported(server: FakeOpenAIServer) -> None:
    server.enqueue(*[Reply(fault="server_error")] * 3)
    with pytest.raises(LLMError, match=r"service failed \(HTTP 500\)"):
        list(make_chat(server, retries=0).stream(MESSAGES))
    assert len(server.requests) == 1


def test_dropped_connection_mid_stream_keeps_partial_text(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(text="Part one. Part two.", chunk_chars=5, fault="drop", fault_after=2))
    received: list[str] = []
    with pytest.raises(LLMError, match="dropped"):
        drain(make_chat(server).stream(MESSAGES), received)
    assert "".join(received) == "Part one. "
    assert len(server.requests) == 1  # never retried mid-stream


def test_stall_past_timeout_ends_the_stream(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(text="Slow answer here.", fault="stall", fault_after=1, stall_seconds=8))
    started = time.monotonic()
    received: list[str] = []
    with pytest.raises(LLMError, match="did not respond within 1 seconds"):
        drain(make_chat(server, timeout=1.0, retries=0).stream(MESSAGES), received)
    assert time.monotonic() - started < 4
    assert received == ["Slow "]
    assert server.streams[0].disconnected.wait(3)


def test_context_length_error_explained(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(fault="context_length"))
    with pytest.raises(LLMError, match="context window"):
        list(make_chat(server).stream(MESSAGES))


def test_bad_key_explained(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(fault="auth"))
    with pytest.raises(LLMError, match="API key") as caught:
        list(make_chat(server).stream(MESSAGES))
    assert "test-secret" not in str(caught.value)


def test_unreachable_server_reported() -> None:
    with FakeOpenAIServer() as fake:
        url = fake.base_url
    chat = OpenAIChat(LLMSettings(base_url=url, timeout=1.0), max_retries=0)
    with pytest.raises(LLMError, match="Cannot reach"):
        list(chat.stream(MESSAGES))


def test_close_mid_stream_closes_upstream(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(text="word " * 200, chunk_chars=5, delay=0.02))
    stream = make_chat(server).stream(MESSAGES)
    assert next(stream)
    assert next(stream)
    stream.close()  # type: ignore[attr-defined]
    assert server.streams[0].disconnected.wait(3)
    assert not server.streams[0].completed.is_set()
    assert server.streams[0].chunks_sent < 100


def test_complete_returns_non_streamed_text(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(text="leave policy for new members"))
    text = make_chat(server).complete([{"role": "user", "content": "rewrite"}], max_tokens=20)
    assert text == "leave policy for new members"
    assert server.requests[0].get("stream") in (None, False)
    assert server.requests[0]["max_tokens"] == 20


def test_api_key_sent_as_bearer(server: FakeOpenAIServer) -> None:
    settings = LLMSettings(base_url=server.base_url, api_key="test-secret")
    list(OpenAIChat(settings).stream(MESSAGES))
    assert server.headers[0]["authorization"] == "Bearer test-secret"
