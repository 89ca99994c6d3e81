"""No message the browser shows holds a clickable link to another host, or a mailto (D2)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from tests.support.chromium import CHROMIUM, launched_chromium, open_page
from tests.support.openai_server import Reply
from tests.support.served_ui import (
    Served,
    ask_and_wait,
    behind_fake_model,
)

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
def hostile_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
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
        yield served


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is missing")
def test_no_message_holds_a_link_to_another_host_or_mailto(hostile_app: Served) -> None:
    """D2: model output (a table and 80 random mixes), document text in Sources and
    titles in the no-match list, rendered by Gradio in Chromium: no foreign <a>."""
    own = urlsplit(hostile_app.url).netloc
    hostile = hostile_app.replies["next"]
    with launched_chromium() as browser:
        page = open_page(browser, timeout_ms=30_000)
        page.goto(hostile_app.url + "/", wait_until="load")
        ask_and_wait(page, "Who do I contact for travel booking questions?")
        # With a model the weak match goes to it (issue 25); its "not covered" brings
        # the no-match list of closest titles.
        hostile_app.replies["next"] = Reply(text="The policy documents do not cover this.")
        try:
            ask_and_wait(page, "dog grooming schedule cats")
        finally:
            hostile_app.replies["next"] = hostile
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
