"""Issue 39 in chromium: each citation marker opens its own sentence; dark mode reads.

One real app behind a fake model for the module. An answer that quotes two sentences of
the leave policy cites it twice: each ``[n]`` previews and highlights its own sentence,
whole; sources read 1..n in the order first cited, and no relevance score is shown.
With the OS in dark mode every text is AA (header status, footer, the feedback
confirmation, the citation popover) and the popovers are dark too.

Run one file at a time: ``python -m pytest tests/e2e/test_browser_round_four.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from tests.support.accessibility import low_contrast
from tests.support.chromium import browser_marks, open_page
from tests.support.openai_server import Reply
from tests.support.served_ui import Served, ask_and_wait_saved, behind_fake_model

pytestmark = [*browser_marks, pytest.mark.slow]

ENTITLED = "Every employee is entitled to 24 working days of paid annual leave per leave year."
PRORATED = "Employees who join or leave during the year earn two days for each full month worked."
TWO_QUOTES = (
    "You get 24 working days of paid annual leave each leave year [1]. If you join or "
    "leave during the year you earn two days for each full month worked [1]."
)

# Worded so that the fake embedder's first hit is the Annual Leave > Entitlement section.
ENTITLEMENT = (
    "How many working days of paid annual leave is every employee entitled to per leave "
    "year, and what do employees who join during the year earn?"
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    pytest.importorskip("playwright.sync_api")
    index = tmp_path_factory.mktemp("round-four") / "index"
    # The scripted markers are what is shown: claim citing (tests/answering/test_claims.py)
    # would re-cite them against the fake embedder's sources.
    with behind_fake_model(
        index, reply=Reply(text=TWO_QUOTES), timeout=10, cite_claims=False
    ) as app:
        yield app


def _answered(browser: Any, served: Served, question: str, *, scheme: str = "light") -> Any:
    context = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme=scheme)
    page = open_page(context)
    page.goto(served.url, wait_until="load")
    page.locator("#chat-input textarea").wait_for()
    ask_and_wait_saved(page, question)
    return page


def _markers(page: Any) -> Any:
    return page.locator(".bot .message-content a[href*='/doc/']").filter(has_text="[")


def test_each_marker_of_one_source_opens_its_own_sentence(served: Served, browser: Any) -> None:
    served.replies["next"] = Reply(text=TWO_QUOTES)
    page = _answered(browser, served, ENTITLEMENT)
    markers = _markers(page)
    assert markers.count() == 2
    quotes = []
    for index in range(2):
        markers.nth(index).click()
        page.wait_for_selector("#citation-pop", state="visible")
        quotes.append(page.locator("#citation-pop blockquote").inner_text())
        page.keyboard.press("Escape")
        page.wait_for_selector("#citation-pop", state="detached")
    assert quotes == [ENTITLED, PRORATED]
    # The viewer highlights the second marker's own sentence.
    href = markers.nth(1).get_attribute("href")
    assert parse_qs(urlparse(href).query)["passage"] == [PRORATED]


def test_sources_read_in_the_order_first_cited_without_a_score(
    served: Served, browser: Any
) -> None:
    served.replies["next"] = Reply(
        text="Emergency loans carry interest at 12% [2]. Annual leave is 24 days [1]."
    )
    page = _answered(browser, served, "What are the loan interest and the annual leave?")
    labels = [text.strip() for text in _markers(page).all_inner_texts()]
    assert labels == ["[1]", "[2]"]
    sources = page.locator(".message-wrap .thought-group").filter(has_text="sources").last
    sources.locator(".title").click()
    listing = sources.inner_text()
    assert "relevance" not in listing
    assert listing.index("[1]") < listing.index("[2]")


_THANKS_OPAQUE = """() => {
  const thanks = [...document.querySelectorAll('#feedback-pop p')]
    .find((p) => p.textContent.includes('Thanks'));
  if (!thanks) return false;
  for (let n = thanks; n; n = n.parentElement) {
    if (Number(getComputedStyle(n).opacity) < 1) return false;
  }
  return true;
}"""


def _dark_background(page: Any, selector: str) -> bool:
    rgb = page.eval_on_selector(selector, "el => getComputedStyle(el).backgroundColor")
    return sum(int(part) for part in rgb[rgb.index("(") + 1 : -1].split(",")[:3]) < 3 * 96


def test_dark_mode_keeps_every_text_aa_and_themes_the_popovers(
    served: Served, browser: Any
) -> None:
    served.replies["next"] = Reply(text=TWO_QUOTES)
    page = _answered(browser, served, ENTITLEMENT, scheme="dark")
    assert page.evaluate("document.body.classList.contains('dark')")
    assert low_contrast(page) == []
    _markers(page).first.click()
    page.wait_for_selector("#citation-pop", state="visible")
    assert _dark_background(page, "#citation-pop")
    assert low_contrast(page) == []
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Dislike").first.click()
    page.wait_for_selector("#feedback-pop", state="visible")
    page.locator("#feedback-pop").get_by_text("Thanks", exact=False).wait_for()
    # Gradio fades the form in; contrast counts opacity, so measure once it is shown.
    page.wait_for_function(_THANKS_OPAQUE)
    assert _dark_background(page, "#feedback-pop")
    assert low_contrast(page) == []


def test_the_footer_offers_staff_no_api_page(served: Served, browser: Any) -> None:
    page = _answered(browser, served, ENTITLEMENT)
    assert page.get_by_text("Use via API").is_visible() is False


LONG = " ".join([ENTITLED.replace(".", " [1].")] * 25)


def test_on_a_phone_the_conversation_gets_the_screen_and_an_answer_shows_from_its_start(
    served: Served, browser: Any
) -> None:
    served.replies["next"] = Reply(text=LONG)
    page = open_page(browser.new_context(viewport={"width": 390, "height": 844}))
    page.goto(served.url, wait_until="load")
    page.locator("#chat-input textarea").wait_for()
    toggle = page.locator("#tools-toggle")
    toggle.wait_for()
    assert not page.get_by_role("button", name="Download conversation (Markdown)").is_visible()
    ask_and_wait_saved(page, ENTITLEMENT)
    chat = page.locator("#chat").bounding_box()
    assert chat["height"] >= 0.75 * 844, chat
    # The answer's start is in view, not only its end.
    start = page.locator(".message-row.bot-row").first.bounding_box()
    assert chat["y"] <= start["y"] < chat["y"] + chat["height"], (start, chat)
    down = page.locator("#chat .scroll-down-button-container button")
    summary = page.locator("#chat .thought-group .title").first.bounding_box()
    if down.count() and down.first.is_visible() and summary:
        box = down.first.bounding_box()
        assert box["x"] >= summary["x"] + summary["width"] or box["y"] >= summary["y"] + 40
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    page.get_by_role("button", name="Download conversation (Markdown)").wait_for()
    page.get_by_text("Recent policy changes").first.wait_for()


def test_the_phone_header_shows_the_whole_title_beside_its_buttons(
    served: Served, browser: Any
) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = open_page(context)
    page.goto(served.url, wait_until="load")
    page.locator("#chat-input textarea").wait_for()
    title = page.locator("#chat-header h1").bounding_box()
    button = page.locator("#new-chat").bounding_box()
    assert title is not None
    assert button is not None
    # One line, nothing over it: the title ends before "New chat" starts, on the same row.
    assert title["x"] + title["width"] <= button["x"]
    assert abs((title["y"] + title["height"] / 2) - (button["y"] + button["height"] / 2)) < 16
    assert page.evaluate(
        "() => { const h = document.querySelector('#chat-header h1');"
        " return h.scrollWidth <= h.clientWidth; }"
    )
    context.close()
