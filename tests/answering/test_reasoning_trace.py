"""A reasoning model's thinking: out of the answer, collapsed and escaped in the Trace."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import pytest

from assistant.answering.llm import LENGTH_NOTE, OpenAIChat, VisibleText
from assistant.answering.service import Assistant
from assistant.config import LLMSettings, Settings, UISettings
from assistant.session import Desk
from assistant.web.format import unlinked_markers
from assistant.web.trace import reasoning_block
from assistant.web.ui import make_responder
from tests.answering.test_service import TOKENIZER, FakeSearcher, online
from tests.support.openai_server import FakeOpenAIServer, Reply

# Markup, a Markdown heading after a blank line, and a figure no source holds: escaped in
# the trace, never rendered, never flagged as an unsupported statement of the answer.
SENT_AS_FIELD = "The user asks about leave.\n\n# Heading?\n<img src=x onerror=alert(1)> 99 days"
SENT_AS_TAGS = "Maybe 40 days? Ask Bob & <b>Carol</b>."
ANSWER = "Full-time members get 25 days [1]."


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def chat(server: FakeOpenAIServer, reply: Reply) -> tuple[str, str]:
    """Ask through the chat's responder; return the answer message and the Trace message."""
    server.enqueue(reply)
    settings = Settings(ui=UISettings(trace="everyone"))
    respond = make_responder(Desk(online(server, FakeSearcher()), settings=settings))
    final = list(respond("How much leave do I get?", []))[-1]
    (trace,) = [m for m in final if (m.metadata or {}).get("title") == "Trace"]
    return unlinked_markers(str(final[0].content)), str(trace.content)


def test_reasoning_is_shown_collapsed_and_escaped_in_the_trace_only(
    server: FakeOpenAIServer,
) -> None:
    reply = Reply(
        text=f"<think>{SENT_AS_TAGS}</think>{ANSWER}", reasoning=SENT_AS_FIELD, chunk_chars=4
    )
    answer, trace = chat(server, reply)
    assert answer.startswith(ANSWER)
    for hidden in ("think", "40 days", "Bob", "99 days", "onerror", "not found in the sources"):
        assert hidden not in answer
    block = r"<details[^>]*><summary>([^<]*)</summary><pre>(.*?)</pre></details>"
    details = re.search(block, trace)
    assert details is not None, trace
    assert "Model reasoning" in details[1]
    shown = html.unescape(details[2].replace("&#10;", "\n"))
    assert SENT_AS_FIELD in shown
    assert SENT_AS_TAGS in shown
    assert "<img" not in trace  # only escaped
    assert "<b>" not in trace
    assert "\n\n" not in trace[trace.index("<details") :]  # one HTML block, no Markdown after
    assert "model reasoning:" in trace  # the trace line counts it


def test_an_answer_without_reasoning_has_no_reasoning_block(server: FakeOpenAIServer) -> None:
    answer, trace = chat(server, Reply(text=ANSWER))
    assert answer == ANSWER
    assert "<details" not in trace
    assert reasoning_block("  \n ") == ""


def test_think_blocks_split_across_deltas_are_kept_for_the_trace() -> None:
    stream = VisibleText()
    pieces = ["<thi", "nk>a <b", ">x</th", "ink>Answer", " <thi", "nk>tail"]
    shown = "".join(stream.feed(p) for p in pieces) + stream.finish()
    assert shown == "Answer "
    assert stream.take_thought() == "a <b>xtail"
    assert stream.take_thought() == ""


def test_a_rewrite_completion_keeps_only_the_text_after_the_thinking(
    server: FakeOpenAIServer,
) -> None:
    server.enqueue(Reply(text="<think>They mean loans.</think>emergency loan interest rate"))
    chat = OpenAIChat(LLMSettings(base_url=server.base_url), max_retries=0)
    messages = [{"role": "user", "content": "and the rate?"}]
    assert chat.complete(messages) == "emergency loan interest rate"


@pytest.mark.parametrize("grounded", [True, False])
def test_the_length_note_is_never_flagged_or_withheld(
    server: FakeOpenAIServer, grounded: bool
) -> None:
    server.enqueue(Reply(text="Full-time members get 25 days [1]. " * 10))
    llm = LLMSettings(base_url=server.base_url, max_tokens=16, grounded_only=grounded)
    model = OpenAIChat(llm, max_retries=0)
    service = Assistant(
        FakeSearcher(), model=model, settings=Settings(llm=llm), tokenizer=TOKENIZER
    )
    run = service.ask("How much leave do I get?")
    "".join(run)
    answer = run.answer()
    assert answer.text.endswith(LENGTH_NOTE)  # its setting's name is no invented name
    assert answer.unsupported_sentences == ()
