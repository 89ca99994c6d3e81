"""The real app served on 127.0.0.1 for web and browser tests, and how a user drives it.

`launched` ingests a folder (with the default embedder: once per session, then copied,
`tests.support.corpora`), builds the real app (`build_app`) over it with the fast
fake embedder and serves it in Gradio's background thread until the ``with`` ends;
`behind_fake_model` does the same with `FakeOpenAIServer` as the chat model, its
next answer in ``Served.replies["next"]``; `demo_launched` serves a UI built on a
scripted service (`tests.support.ui_fakes`). `ask`, `ask_and_wait` and `ask_and_wait_saved`
type a question into the chat as a user does; `rated_record` reads back what a thumb stored.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assistant.cli.search import main as search_main
from assistant.config import LLMSettings, Settings, StoreSettings, UISettings
from assistant.index.ingest import ingest
from assistant.protocols import Embedder
from assistant.web.app import build_app
from assistant.web.ui import STORAGE_KEY, launch
from assistant.web.viewer import DocumentViewer
from tests.conftest import SAMPLE_POLICIES, FakeEmbedder, free_port
from tests.support.corpora import ingest_once
from tests.support.openai_server import FakeOpenAIServer, Reply

ANSWER = "Emergency Loans carry interest at 12% per annum on a reducing balance [1]."


@dataclass
class Served:
    """A launched app: where it listens, what it serves, and the fake model behind it."""

    url: str  # without a trailing "/", so paths are appended as url + "/doc/..."
    settings: Settings
    docs: Path
    http_app: Any  # Gradio's Starlette app, whose routes a test can enumerate
    server: FakeOpenAIServer | None = None
    # What the fake model answers next, for apps served `behind_fake_model`.
    replies: dict[str, Reply] = field(default_factory=dict)

    @property
    def index(self) -> Path:
        return self.settings.store.path

    @property
    def model(self) -> FakeOpenAIServer:
        assert self.server is not None, "this app was served without a fake model"
        return self.server


def app_settings(
    index: Path,
    *,
    model_url: str = "",
    ui: Mapping[str, Any] | None = None,
    **llm: Any,
) -> Settings:
    """Return settings for an app on a free port of 127.0.0.1 over the index at ``index``.

    With ``model_url``, the chat model is there (API key "test" unless ``llm`` names
    one); ``llm`` and ``ui`` are further `LLMSettings` and `UISettings` fields.
    """
    if model_url:
        llm = {"base_url": model_url, "api_key": "test", **llm}
    return Settings(
        store=StoreSettings(path=index),
        llm=LLMSettings(**llm),
        # The browser tests wait for an answer's Trace: everyone sees it here.
        ui=UISettings(**{"port": free_port(), "trace": "everyone", **(ui or {})}),
    )


@contextlib.contextmanager
def launched(
    settings: Settings,
    docs: Path,
    *,
    ingest_first: bool = True,
    expect_clean: bool = False,
    embedder: Embedder | None = None,
    server: FakeOpenAIServer | None = None,
    replies: dict[str, Reply] | None = None,
) -> Iterator[Served]:
    """Ingest ``docs`` (unless ``ingest_first`` is off), serve the app over them, close it after.

    Args:
        settings: The app's settings (`app_settings` makes the usual ones).
        docs: The document root: ingested, and the one the viewer serves from.
        ingest_first: Off when the test has built the index already. With no ``embedder``
            the index is a copy of the session's one ingest of ``docs`` (same settings).
        expect_clean: Fail unless the ingest reports no problem with any document.
        embedder: For ingest and app alike; a fresh `FakeEmbedder` when None.
        server: The fake model the settings point at, kept on `Served` for the test.
        replies: The fake model's scripted next answer, kept on `Served` for the test.
    """
    if ingest_first:
        # With the default embedder, one ingest of ``docs`` per session, copied here.
        problems = (
            ingest_once(docs, settings)
            if embedder is None
            else ingest([docs], settings=settings, embedder=embedder).problems
        )
        if expect_clean:
            assert not problems, problems
    embedder = embedder or FakeEmbedder()
    app = build_app(settings, doc_roots=[docs], embedder=embedder)
    url = app.launch()
    try:
        yield Served(url.rstrip("/"), settings, docs, app.demo.app, server, replies or {})
    finally:
        app.demo.close()


@contextlib.contextmanager
def behind_fake_model(
    index: Path,
    docs: Path = SAMPLE_POLICIES,
    *,
    reply: Reply | None = None,
    handler: Callable[[dict[str, Any]], Reply] | None = None,
    ui: Mapping[str, Any] | None = None,
    expect_clean: bool = False,
    embedder: Embedder | None = None,
    **llm: Any,
) -> Iterator[Served]:
    """Serve ``docs`` with `FakeOpenAIServer` as the model, on a real socket.

    The model answers ``handler(body)`` when given; otherwise ``Served.replies["next"]``,
    which starts as ``reply`` and which a test may replace between questions.
    """
    replies = {"next": reply or Reply(text=ANSWER)}
    with FakeOpenAIServer(handler=handler or (lambda body: replies["next"])) as server:
        settings = app_settings(index, model_url=server.base_url, ui=ui, **llm)
        with launched(
            settings,
            docs,
            expect_clean=expect_clean,
            embedder=embedder,
            server=server,
            replies=replies,
        ) as served:
            yield served


@contextlib.contextmanager
def demo_launched(
    demo: Any, settings: Settings, roots: Sequence[Path] = (SAMPLE_POLICIES,)
) -> Iterator[str]:
    """Serve a `build_demo` UI (a scripted service behind it) with a viewer over ``roots``.

    Yields its URL without a trailing "/"; the demo is closed after.
    """
    url = launch(demo, settings=settings, viewer=DocumentViewer(roots=list(roots)))
    try:
        yield url.rstrip("/")
    finally:
        demo.close()


def ask(page: Any, question: str) -> None:
    """Type ``question`` into the chat box and send it with Enter, as a user does."""
    box = page.locator("textarea").first
    box.fill(question)
    box.press("Enter")


def traces(page: Any) -> Any:
    """Return the Trace titles on the page: one per answer, its last message."""
    return page.locator(".message-wrap").get_by_text("Trace", exact=True)


def ask_and_wait(page: Any, question: str) -> None:
    """Ask ``question`` and wait until its answer is complete (its Trace is shown)."""
    before = traces(page).count()
    ask(page, question)
    traces(page).nth(before).wait_for()


def ask_and_wait_saved(page: Any, question: str) -> None:
    """Ask and wait until the answer's turn is over: its save (localStorage) is its last update.

    Gradio re-renders the chat for that save after the Trace shows, so a test that reads or
    clicks inside the answer waits for it first.
    """
    before = saved_conversations(page)
    ask_and_wait(page, question)
    wait_for_save(page, before)


_STORED = f"localStorage.getItem({json.dumps(STORAGE_KEY)})"


def saved_conversations(page: Any) -> str | None:
    """Return what the page keeps in localStorage now (to tell its next save by)."""
    stored = page.evaluate(_STORED)
    return None if stored is None else str(stored)


def wait_for_save(page: Any, before: str | None) -> None:
    """Wait (polling) until the page's saved conversations differ from ``before``."""
    page.wait_for_function(f"{_STORED} !== {json.dumps(before)}")


def audit_records(index: Path) -> list[dict[str, Any]]:
    """Return the audit log beside ``index`` as ``audit export`` prints it, one dict a line."""
    out = io.StringIO()
    assert search_main(["audit", "export", "--index", str(index)], environ={}, stdout=out) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def rated_record(index: Path, question: str, *, timeout: float = 10.0) -> dict[str, Any] | None:
    """Wait for the audit record of ``question`` to hold feedback; None if none came in time.

    The UI stores a thumb after the click returns, so a test polls for it.
    """
    deadline = time.monotonic() + timeout
    while True:
        mine = [r for r in audit_records(index) if r["question"] == question]
        if mine and mine[0]["feedback"]:
            return mine[0]
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)
