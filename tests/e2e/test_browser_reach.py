"""Issue 30: a chat staff can reach and drive, in Debian's chromium at 1440x900 and 390x844.

Each [n] of an answer is a link that opens its passage in place (section path, the cited
sentence, a link to the viewer with the passage); the Sources name the full section path.
The question box stays in view and keeps the focus after each of ten answers; Esc stops
an answer, Ctrl+Shift+O starts a new chat, Shift+Esc goes back to the question box, and
the header's ``?`` lists them; every control has an accessible name in Chromium's own
accessibility tree, every text meets WCAG AA contrast (computed from the styles) on the
chat and in the viewer, and the focused question box shows a ring. One real app behind
a fake model for the module.

Run one file at a time: ``python -m pytest tests/e2e/test_browser_reach.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.accessibility import low_contrast, unnamed_controls
from tests.support.chromium import browser_marks, expect, open_page
from tests.support.openai_server import Reply
from tests.support.served_ui import (
    ANSWER,
    Served,
    ask,
    ask_and_wait,
    ask_and_wait_saved,
    behind_fake_model,
    traces,
)

pytestmark = browser_marks

SIZES = {"desktop": (1440, 900), "phone": (390, 844)}
QUESTIONS = (
    "What is the emergency loan interest rate?",
    "How many days of annual leave do staff get?",
    "What is the penalty for early loan repayment?",
)
# The cited section's heading shows below the sticky breadcrumb when it fits on the screen
# with the cited sentence; otherwise the sentence itself does (it matters more).
HEADING_UNDER_CRUMBS = """() => {
  const mark = document.getElementById("cited");
  const h = mark.closest("section").querySelector("h1,h2,h3,h4,h5,h6");
  const below = document.querySelector(".crumbs").getBoundingClientRect().bottom - 1;
  const m = mark.getBoundingClientRect();
  if (!h) return m.top >= below && m.bottom <= innerHeight;
  const r = h.getBoundingClientRect();
  if (m.bottom - r.top <= innerHeight - below) return r.top >= below && m.bottom <= innerHeight;
  return m.top >= below;
}"""
SLOW = Reply(text="Emergency Loans carry interest at 12% per annum [1]. " * 40, delay=0.05)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    pytest.importorskip("playwright.sync_api")
    with behind_fake_model(
        tmp_path_factory.mktemp("index"),
        reply=Reply(text=ANSWER),
        timeout=10,
        grounded_only=False,
    ) as app:
        yield app


@pytest.fixture
def quick(served: Served) -> Iterator[Served]:
    """The app with its quick scripted answer (a test may slow it down)."""
    served.replies["next"] = Reply(text=ANSWER)
    yield served
    served.replies["next"] = Reply(text=ANSWER)


def _page(browser: Any, size: str) -> Any:
    width, height = SIZES[size]
    return open_page(browser.new_context(viewport={"width": width, "height": height}))


def _opened(browser: Any, served: Served, size: str = "desktop") -> Any:
    page = _page(browser, size)
    page.goto(served.url, wait_until="load")
    page.locator("#chat-input textarea").wait_for()
    return page


FOCUSED_IN_BOX = "() => document.activeElement?.closest('#chat-input') !== null"


def _focused_is_question_box(page: Any) -> bool:
    """Wait (polling) until the question box has the focus; False if it never does."""
    page.wait_for_function(FOCUSED_IN_BOX, timeout=5_000)
    return True


def _streaming(page: Any) -> None:
    """Ask for the slow answer and wait until its first words show (Stop is offered)."""
    ask(page, QUESTIONS[0])
    page.locator(".bot").get_by_text("Emergency Loans carry", exact=False).first.wait_for()
    page.locator("#chat-input .stop-button").wait_for()


# Where the question box is once it has the focus back, read in the same step as the focus.
BOX_WHEN_FOCUSED = """() => {
  const box = document.querySelector('#chat-input textarea');
  if (!box || document.activeElement?.closest('#chat-input') == null) return null;
  const r = box.getBoundingClientRect();
  return {y: r.y, height: r.height};
}"""
# The shortcuts listing: each key shown, and the listing inside the window, in one step
# (the header may re-render between two reads).
SHORTCUTS_SHOWN = """([keys, width]) => {
  const listing = document.querySelector('#shortcuts-help dl');
  if (!listing || !listing.getClientRects().length) return null;
  const shown = [...listing.querySelectorAll('kbd')]
    .filter((n) => n.getClientRects().length)
    .map((n) => n.textContent.trim());
  const r = listing.getBoundingClientRect();
  const found = keys.filter((key) => shown.includes(key));
  return found.length === keys.length ? {keys: found, x: r.x, right: r.right} : null;
}"""


@pytest.mark.parametrize("size", sorted(SIZES))
def test_the_question_box_stays_in_view_and_focused_after_ten_answers(
    quick: Served, browser: Any, size: str
) -> None:
    page = _opened(browser, quick, size)
    height = SIZES[size][1]
    for number in range(10):
        ask_and_wait(page, QUESTIONS[number % len(QUESTIONS)])
        # Focus comes back once the box is enabled again (polled, not slept); the box's
        # place is read in the same step.
        where = page.wait_for_function(BOX_WHEN_FOCUSED).json_value()
        assert where["y"] >= 0, (number, where)
        assert where["y"] + where["height"] <= height, (number, where)
    page_height = page.evaluate("document.scrollingElement.scrollHeight")
    assert page_height <= height + 1, f"the page grew to {page_height} px instead of the chat"
    chat = page.locator("#chat").bounding_box()
    assert chat is not None
    assert chat["height"] < height


def test_esc_stops_an_answer(quick: Served, browser: Any) -> None:
    page = _opened(browser, quick)
    quick.replies["next"] = SLOW
    _streaming(page)
    page.keyboard.press("Escape")
    page.get_by_text("Stopped: the answer above is incomplete.").wait_for()
    page.locator("#chat-input .stop-button").wait_for(state="detached")


def test_ctrl_shift_o_starts_a_new_chat_and_shift_esc_goes_to_the_question_box(
    quick: Served, browser: Any
) -> None:
    page = _opened(browser, quick)
    ask_and_wait(page, QUESTIONS[0])
    page.locator("#chat-status").click()
    page.keyboard.press("Shift+Escape")
    assert _focused_is_question_box(page)
    page.locator("#chat-status").click()
    page.keyboard.press("Control+Shift+O")
    page.locator(".message-row").first.wait_for(state="detached")
    expect(traces(page)).to_have_count(0)
    assert _focused_is_question_box(page)


@pytest.mark.parametrize("size", sorted(SIZES))
def test_the_help_lists_the_shortcuts(quick: Served, browser: Any, size: str) -> None:
    page = _opened(browser, quick, size)
    help_button = page.get_by_label("Keyboard shortcuts")
    help_button.click()
    keys = ["Esc", "Ctrl+Shift+O", "Shift+Esc"]
    shown = page.wait_for_function(SHORTCUTS_SHOWN, arg=[keys, SIZES[size][0]]).json_value()
    assert shown["keys"] == keys
    assert shown["x"] >= 0, shown
    assert shown["right"] <= SIZES[size][0], shown


def test_every_control_is_named_and_every_text_meets_aa_contrast(
    quick: Served, browser: Any
) -> None:
    page = _opened(browser, quick)
    assert unnamed_controls(page) == []
    quick.replies["next"] = SLOW
    _streaming(page)
    assert unnamed_controls(page) == [], "while an answer streams (Stop)"
    page.keyboard.press("Escape")
    page.get_by_text("Stopped: the answer above is incomplete.").wait_for()
    page.locator("#chat-input .submit-button").wait_for()
    quick.replies["next"] = Reply(text=ANSWER)
    # Contrast counts opacity: measured once the turn's last re-render (its save) is done.
    ask_and_wait_saved(page, QUESTIONS[1])
    assert unnamed_controls(page) == []
    assert low_contrast(page) == []
    link = page.locator(".message-content a", has_text="[1]").last
    viewer = _page(browser, "desktop")
    viewer.goto(quick.url + str(link.get_attribute("href")), wait_until="load")
    assert unnamed_controls(viewer) == []
    assert low_contrast(viewer) == []


def test_the_focused_question_box_shows_a_ring(quick: Served, browser: Any) -> None:
    page = _opened(browser, quick)
    page.keyboard.press("Shift+Escape")
    ring = page.evaluate(
        "(() => { const s = getComputedStyle(document.activeElement);"
        " return [s.outlineStyle, parseFloat(s.outlineWidth)]; })()"
    )
    assert ring[0] != "none", ring
    assert ring[1] >= 2, ring


@pytest.mark.parametrize("size", sorted(SIZES))
def test_a_citation_opens_its_passage_in_place_with_a_link_to_the_viewer(
    quick: Served, browser: Any, size: str
) -> None:
    page = _opened(browser, quick, size)
    ask_and_wait_saved(page, QUESTIONS[0])
    marker = page.locator(".message-content a", has_text="[1]").last
    path = str(marker.get_attribute("title"))
    assert path.startswith("[1] ")
    assert " > " in path
    _open_citation(page, marker)
    pop = page.get_by_role("dialog")
    expect(pop.get_by_text(path, exact=True)).to_be_visible()
    expect(pop.locator("blockquote")).to_have_text(re.compile(r"\S"))  # the cited sentence
    viewer = pop.get_by_role("link", name="Open in the document")
    expect(viewer).to_have_attribute("href", re.compile("passage="))
    where = pop.bounding_box()
    assert where is not None
    width, height = SIZES[size]
    assert where["x"] >= 0
    assert where["x"] + where["width"] <= width
    assert where["y"] + where["height"] <= height
    page.keyboard.press("Escape")
    pop.wait_for(state="detached")
    # The Sources under the answer name the same full path.
    summary = page.locator(".message-row.bot-row").last.locator(".thought-group .title").first
    expect(summary).to_contain_text(path.removeprefix("[1] "))


@pytest.mark.parametrize("size", sorted(SIZES))
def test_the_viewer_marks_the_whole_sentence_under_a_visible_heading_and_goes_back(
    quick: Served, browser: Any, size: str
) -> None:
    width, height = SIZES[size]
    context = browser.new_context(
        viewport={"width": width, "height": height}, is_mobile=size == "phone"
    )
    page = open_page(context)
    page.goto(quick.url, wait_until="load")
    ask_and_wait_saved(page, QUESTIONS[0])
    _open_citation(page, page.locator(".message-content a", has_text="[1]").last)
    with page.expect_popup() as opened:
        page.get_by_role("link", name="Open in the document").click()
    viewer = opened.value
    viewer.wait_for_load_state("load")
    assert viewer.evaluate("innerWidth") == width, "no viewport meta: the page is desktop-wide"
    passage = viewer.evaluate("new URL(location.href).searchParams.get('passage')")
    marked = viewer.evaluate(
        "Array.from(document.querySelectorAll('mark')).map(m => m.textContent).join('')"
    )
    assert " ".join(marked.split()).lower() == " ".join(passage.split()).lower()
    viewer.wait_for_function(HEADING_UNDER_CRUMBS)
    # dispatch_event, not click: click waits on the page after the event, and the page
    # closing is the very outcome expected here.
    with viewer.expect_event("close"):
        viewer.get_by_role("link", name="Back to the chat").dispatch_event("click")
    # The chat tab still holds the conversation.
    expect(traces(page)).to_have_count(1)


# The fake model's sources hold other words, so a scripted table answer would be flagged
# cell by cell; the test puts the rendered table of a real answer into the page instead.
WIDE_TABLE_HTML = (
    "<table><thead><tr><th>Product</th><th>Interest or charge</th><th>Maximum amount</th>"
    "<th>Maximum period</th><th>Minimum membership</th></tr></thead><tbody><tr>"
    "<td>Development Loan</td><td>14% p.a. reducing balance</td>"
    "<td>3 x deposits, up to KES 3,000,000</td><td>48 months</td><td>6 months</td>"
    "</tr></tbody></table>"
)


@pytest.mark.parametrize("size", sorted(SIZES))
def test_a_table_wider_than_the_screen_says_it_scrolls(
    quick: Served, browser: Any, size: str
) -> None:
    page = _opened(browser, quick, size)
    # The table is put into the answer once Gradio has rendered it for the last time.
    ask_and_wait_saved(page, QUESTIONS[0])
    content = page.locator(".message-row.bot-row .message-content").last
    content.evaluate(
        "(node, table) => node.insertAdjacentHTML('beforeend', table)", WIDE_TABLE_HTML
    )
    table = page.locator(".message-content table").last
    wide = table.evaluate("t => t.scrollWidth > t.clientWidth + 1")
    hint = page.get_by_text("Scroll sideways to see all 5 columns")
    if size == "phone":
        assert wide, "the table fits a phone: nothing to test"
        hint.wait_for()
        assert table.evaluate("t => getComputedStyle(t).overflowX") == "auto"
    else:
        assert not wide
        assert hint.count() == 0


# What the page holds when a clicked citation opened no passage: twice in about 40 runs
# of this file at load 8-11 (phone size) the dialog never came, for a cause not yet seen.
_CITATION_STATE = """(marker) => ({
  clicked: marker ? [marker.isConnected, marker.textContent, marker.getAttribute('href')] : null,
  markers: [...document.querySelectorAll('.message-content a')]
    .filter(a => /^\\[\\d+\\]$/.test(a.textContent.trim())).length,
  active: document.activeElement ? document.activeElement.outerHTML.slice(0, 160) : null,
  pop: Boolean(document.getElementById('citation-pop')),
  generating: Boolean(document.querySelector('#chat-input .stop-button')),
  scroll: [window.scrollY, innerHeight],
})"""


def _open_citation(page: Any, marker: Any) -> None:
    """Click a citation and wait for its passage; if none comes, fail with the page's state."""
    handle = marker.element_handle()
    marker.click()
    try:
        page.wait_for_selector("#citation-pop", state="visible")
    except Exception as error:  # Playwright's TimeoutError: reported with the page's state
        state = page.evaluate(_CITATION_STATE, handle)
        raise AssertionError(f"no passage opened for the clicked citation: {state}") from error
