"""Every model answer ends within its budget, however slow, stalled or endless the server (D5)."""

from __future__ import annotations

import time

from assistant.answering.citations import check_answer
from assistant.answering.llm import LENGTH_NOTE, TIME_NOTE, OpenAIChat
from assistant.answering.safety import SafeStream
from assistant.config import LLMSettings
from tests.support.model_chat import LEAVE, OWN, chat_over, final_messages, is_sources
from tests.support.openai_server import FakeOpenAIServer, Reply


def test_a_slow_endless_stream_ends_near_the_budget_with_a_note_and_sources() -> None:
    """D5: a slow-drip, looping model is cut at ASSISTANT_LLM_TOTAL_TIMEOUT."""
    endless = Reply(text="Staff get 25 days of annual leave [1]. ", endless=True, delay=0.05)
    with FakeOpenAIServer(default=endless) as server:
        respond = chat_over(server, total_timeout=2)
        started = time.monotonic()
        messages = final_messages(respond, "How much annual leave?")
        elapsed = time.monotonic() - started
        assert server.streams[0].disconnected.wait(5), "the upstream stream was not closed"
    assert 1.8 <= elapsed <= 4, elapsed
    body = messages[0].content
    assert "25 days of annual leave" in body
    assert TIME_NOTE.strip() in body
    assert any(is_sources(m) for m in messages)


def test_a_stalled_server_is_cut_at_the_budget_not_the_read_timeout() -> None:
    """D5: the budget holds even while a read is blocked (timeout 10 s, budget 2 s)."""
    stall = Reply(text="Staff get 25 days [1]. More text", fault="stall", stall_seconds=15)
    with FakeOpenAIServer(default=stall) as server:
        respond = chat_over(server, total_timeout=2)
        started = time.monotonic()
        messages = final_messages(respond, "How much annual leave?")
        elapsed = time.monotonic() - started
    assert elapsed <= 4, elapsed
    assert TIME_NOTE.strip() in messages[0].content


def test_a_server_that_ignores_max_tokens_is_cut_at_the_output_cap() -> None:
    """D5: the character cap (max_tokens x 8) holds for a server that never stops."""
    endless = Reply(text="Staff get 25 days of annual leave [1]. ", endless=True, chunk_chars=40)
    with FakeOpenAIServer(default=endless) as server:
        settings = LLMSettings(base_url=server.base_url, max_tokens=100, total_timeout=60)
        deltas = list(
            OpenAIChat(settings, max_retries=0).stream([{"role": "user", "content": "q"}])
        )
        assert server.requests[0]["max_tokens"] == 100
    text = "".join(deltas)
    assert deltas[-1] == LENGTH_NOTE
    assert settings.max_chars <= len(text) - len(LENGTH_NOTE) < settings.max_chars + 40


def _processing_seconds(chars: int) -> float:
    unit = (
        "Staff get 25 days of annual leave [1]. See [form](http://evil.example/x) or "
        "www.evil.example and Mail@evil.example; Eve of Acme said 99 days <b>x</b>.\n\n"
    )
    text = (unit * (chars // len(unit) + 1))[:chars]
    started = time.process_time()
    stream = SafeStream(allowed_hosts=OWN)
    for at in range(0, len(text), 6):
        stream.feed(text[at : at + 6])
    stream.finish()
    check_answer("How much annual leave?", stream.text, (LEAVE,))
    return time.process_time() - started


def test_per_answer_work_is_linear_in_the_answer_length() -> None:
    """D5: neutralising and checking 200k characters costs ~10x 20k, not 100x."""
    small = min(_processing_seconds(20_000) for _ in range(2))
    large = _processing_seconds(200_000)
    assert large / small < 25, (small, large)
