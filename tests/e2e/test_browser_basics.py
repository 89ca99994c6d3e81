"""The chat UI in a real browser (Debian's chromium driven by Playwright).

The app is the real one (`build_app`: index reader, hybrid retriever, assistant,
viewer) over an index of the sample policies built with the fast fake
embedder; the language model is `FakeOpenAIServer` on a real socket.

Run: ``python -m pytest tests/e2e/test_browser_basics.py -m browser``. Needs
``/usr/bin/chromium`` (``apt-get install chromium``); skipped without it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from assistant.config import Settings, StoreSettings
from assistant.index.ingest import ingest
from tests.conftest import FakeEmbedder
from tests.support.chromium import browser_marks, expect, open_page
from tests.support.openai_server import Reply
from tests.support.served_ui import ANSWER, Served, ask, ask_and_wait_saved, behind_fake_model

SLOW = Reply(text="Counting slowly " + "and on " * 200, chunk_chars=8, delay=0.25)

pytestmark = browser_marks


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    pytest.importorskip("playwright.sync_api")
    with behind_fake_model(
        tmp_path_factory.mktemp("index"),
        reply=Reply(text=ANSWER, chunk_chars=6, delay=0.02),
        timeout=10,
    ) as served:
        yield served


@pytest.fixture
def page(served: Served, browser: Any) -> Any:
    return open_page(browser)


def test_question_streams_an_answer_with_sources_and_a_working_section_link(
    served: Served, page: Any
) -> None:
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(served.url, wait_until="load")
    served.replies["next"] = Reply(text=ANSWER, chunk_chars=6, delay=0.02)

    # The Sources are opened once the turn's last re-render (its save) is done: Gradio
    # would close a group it re-renders under the click.
    ask_and_wait_saved(page, "What is the emergency loan interest rate?")

    bot = page.locator(".bot").first
    bot.get_by_text("12% per annum", exact=False).first.wait_for()
    # A short cited answer: the Sources start collapsed under a one-line summary.
    sources = page.locator(".message-wrap .thought-group .title").filter(has_text="1 source:")
    sources.first.wait_for()
    sources.first.click()
    link = page.get_by_role("link", name="open section").first
    link.wait_for()
    href = link.get_attribute("href")
    assert href is not None
    assert href.startswith("/doc/loan-policy.md?passage="), href
    expect(page.locator(".message-wrap")).to_contain_text("[1]")
    expect(page.locator(".message-wrap")).to_contain_text("Loan Policy")

    page.goto(served.url.rstrip("/") + href, wait_until="load")
    section = page.locator("section.cited")
    assert section.count() == 1
    assert re.search(r"(?i)emergency|interest", section.inner_text())
    assert page.evaluate("location.hash") == "#cited"

    own = urlsplit(served.url).netloc
    foreign = [
        url
        for url in requests
        if urlsplit(url).scheme in ("http", "https", "ws", "wss") and urlsplit(url).netloc != own
    ]
    assert foreign == [], f"requests left for other hosts: {foreign}"
    assert requests, "the page made no requests at all?"


def test_stop_button_closes_the_upstream_stream(served: Served, page: Any) -> None:
    page.goto(served.url, wait_until="load")
    served.replies["next"] = SLOW
    before = len(served.model.streams)

    ask(page, "Tell me about the emergency loan interest rate, slowly")
    page.locator(".bot").get_by_text("Counting slowly", exact=False).first.wait_for()
    assert len(served.model.streams) == before + 1
    stream = served.model.streams[-1]
    assert not stream.completed.is_set()

    page.locator("button.stop-button").first.click()

    assert stream.disconnected.wait(10), "the model server never saw the client hang up"
    assert not stream.completed.is_set()
    sent = stream.chunks_sent
    assert sent < len(SLOW.text) // SLOW.chunk_chars


def test_closing_the_tab_closes_the_upstream_stream(served: Served, page: Any) -> None:
    page.goto(served.url, wait_until="load")
    served.replies["next"] = SLOW
    before = len(served.model.streams)

    ask(page, "What is the emergency loan interest rate, slowly?")
    page.locator(".bot").get_by_text("Counting slowly", exact=False).first.wait_for()
    stream = served.model.streams[before]

    page.close()

    assert stream.disconnected.wait(30), "closing the tab did not stop the model stream"
    assert not stream.completed.is_set()


def test_documents_ingested_after_start_appear_in_the_filters(
    served: Served, page: Any, tmp_path: Path
) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "canteen.md").write_text("# Canteen Rules\n\nLunch is served from 12:30.\n")
    settings = Settings(store=StoreSettings(path=served.index))
    ingest([extra], settings=settings, embedder=FakeEmbedder())

    page.goto(served.url, wait_until="load")
    page.get_by_text("Filters").first.click()
    page.get_by_label("Documents").first.click()

    page.get_by_text("Canteen Rules (canteen.md)").first.wait_for()
