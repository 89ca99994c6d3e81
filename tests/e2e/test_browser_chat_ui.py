"""The chat as a new user sees it, in Debian's chromium: layout, sources, copy, stop, viewer.

Issue 15. Each test checks what a user would check (sizes against the viewport, the
title's count, whether a table scrolls inside its box, what the clipboard holds,
where the viewer lands), not pixels. Two real apps (`build_app`) with the fast fake
embedder: the sample policies behind a fake model on a real socket, and the GitHub
site-policy corpus behind a model URL whose port is closed.

Run one file at a time: ``python -m pytest tests/e2e/test_browser_chat_ui.py -m browser``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import free_port
from tests.support.chromium import browser_marks, expect, open_page
from tests.support.openai_server import Reply
from tests.support.paths import ROOT
from tests.support.served_ui import (
    ANSWER,
    Served,
    app_settings,
    ask,
    ask_and_wait_saved,
    behind_fake_model,
    launched,
)

DEV = ROOT / "data" / "corpora" / "github-site-policy" / "Policies"
SAMPLE_QUESTIONS = (
    "What is the emergency loan interest rate?",
    "How many days of annual leave do staff get?",
    "What is the penalty for early loan repayment?",
    "How many guarantors does a development loan need?",
)
WIDE_TABLE = (
    "The rates [1]:\n\n| Product | Interest or charge | Maximum amount | Maximum period |"
    " Minimum membership |\n|---|---|---|---|---|\n| Development Loan | 14% p.a. reducing "
    "balance | 3 x deposits, up to KES 3,000,000 | 48 months | 6 months |\n"
)
MODEL = "policy-test-model"

pytestmark = browser_marks


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    pytest.importorskip("playwright.sync_api")
    with behind_fake_model(
        tmp_path_factory.mktemp("index"),
        reply=Reply(text=ANSWER, chunk_chars=6, delay=0.01),
        model=MODEL,
        timeout=10,
        # The scripted answers test how citations and sources are shown; grounded only
        # would replace their sentences (FakeEmbedder's sources hold other words), and
        # claim citing would re-cite them (tests/answering/test_claims.py checks that).
        grounded_only=False,
        cite_claims=False,
    ) as served:
        yield served


@pytest.fixture(scope="module")
def dev_unreachable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The dev corpus, with a model URL nothing listens on."""
    pytest.importorskip("playwright.sync_api")
    closed = f"http://127.0.0.1:{free_port()}/v1"
    settings = app_settings(
        tmp_path_factory.mktemp("dev-index"), model_url=closed, model=MODEL, timeout=5
    )
    with launched(settings, DEV) as served:
        yield served


def _page(browser: Any, width: int = 1920, height: int = 1080, **options: Any) -> Any:
    return open_page(browser.new_context(viewport={"width": width, "height": height}, **options))


def _answered(page: Any, question: str) -> Any:
    """Ask and return the answer's bot row once its turn is over (its save, the last re-render).

    Gradio re-renders the chat for that save after the Trace shows; a read or a click
    before it may meet the row being replaced.
    """
    ask_and_wait_saved(page, question)
    return page.locator(".message-row.bot-row").last


def _box(locator: Any) -> dict[str, float]:
    box = locator.bounding_box()
    assert box is not None
    return dict(box)


def test_landing_page_fills_the_window_in_a_reading_column_and_says_what_is_loaded(
    sample: Served, browser: Any
) -> None:
    page = _page(browser)
    page.goto(sample.url, wait_until="load")
    page.locator("#chat .bubble-wrap").first.wait_for()
    status = page.locator("#chat-status")
    status.get_by_text("answers:", exact=False).wait_for()

    chat = _box(page.locator("#chat"))
    assert chat["height"] >= 0.55 * 1080, f"the chat is a fixed box: {chat}"
    filters = _box(page.get_by_text("Filters", exact=True).first)
    assert filters["y"] + filters["height"] <= 1080, "the Filters row is below the fold"
    column = _box(page.locator("textarea").first)
    assert column["width"] <= 900, f"input line {column['width']} px wide"
    assert abs((column["x"] + column["width"] / 2) - 960) < 40, "the column is not centred"

    expect(page.get_by_text("Policy assistant", exact=True)).to_have_count(1)  # not twice
    expect(status).to_contain_text(
        re.compile(r"\d+ documents · \d+ chunks · last ingest \d{4}-\d\d-\d\d")
    )
    expect(status).to_contain_text(f"answers: model: {MODEL}")
    expect(page.get_by_role("button", name="New chat")).to_be_visible()


_EXAMPLES = """() => {
  const texts = [...document.querySelectorAll('.examples button, .example')]
    .map((e) => e.innerText.trim())
    .filter(Boolean);
  return texts.length ? texts : null;
}"""


def test_examples_come_from_the_loaded_corpus_not_the_sample_policies(
    dev_unreachable: Served, browser: Any
) -> None:
    page = _page(browser)
    page.goto(dev_unreachable.url, wait_until="load")
    # Found and read in one step: Gradio may re-render the examples between two reads.
    offered = page.wait_for_function(_EXAMPLES).json_value()
    assert offered, "no example questions"
    for question in SAMPLE_QUESTIONS:
        assert question not in offered
    headings = " ".join(p.read_text(errors="replace") for p in DEV.rglob("*.md"))
    for question in offered:
        # Each is a question heading of the corpus or one of its headings asked about.
        topic = question.rstrip("?").split(" say about ")[-1]
        assert topic.lower() in headings.lower(), question


def test_wide_table_scrolls_inside_its_box_at_390_px(sample: Served, browser: Any) -> None:
    page = _page(browser, 390, 844)
    page.goto(sample.url, wait_until="load")
    sample.replies["next"] = Reply(text=WIDE_TABLE, chunk_chars=40, delay=0.01)

    row = _answered(
        page, "Summary of rates: product, interest or charge, maximum amount, maximum period"
    )
    # The table and its answer's bubble measured in one step.
    sizes = row.evaluate(
        "r => { const t = r.querySelector('.message-content table');"
        " const b = r.querySelector('.bot').getBoundingClientRect();"
        " return {scroll: t.scrollWidth, client: t.clientWidth,"
        " right: t.getBoundingClientRect().right, page: document.documentElement.scrollWidth,"
        " cell: Math.min(...[...t.querySelectorAll('td,th')].map(c => c.clientWidth)),"
        " bubble: b.x + b.width}; }"
    )
    assert sizes["page"] <= 390, f"the page scrolls sideways: {sizes}"
    assert sizes["right"] <= 390, sizes
    assert sizes["scroll"] > sizes["client"], "the table neither scrolls nor fits"
    assert sizes["cell"] >= 60, f"cells collapse to a letter per line: {sizes}"
    assert sizes["bubble"] <= 390 - 8, f"the answer runs off the screen: {sizes}"


def test_short_cited_answer_has_collapsed_sources_with_a_summary_and_plain_excerpts(
    sample: Served, browser: Any
) -> None:
    page = _page(browser)
    page.goto(sample.url, wait_until="load")
    sample.replies["next"] = Reply(
        text="Emergency Loans carry 12% [1]; the table of rates agrees [2] [3].",
        chunk_chars=20,
        delay=0.01,
    )

    # Its sources include a table (the records retention schedule).
    row = _answered(
        page,
        "Which loan product has the maximum period of 48 months and minimum membership "
        "of 6 months in the summary of rates table?",
    )
    group = row.locator(".thought-group").filter(has_text=re.compile(r"\d sources?: "))
    title = group.locator(".title").first
    expect(title).to_have_text(
        re.compile(r"^\s*3 sources: [^>\n]+ > [^,\n]+, [^\n]*$"), use_inner_text=True
    )
    assert "\n" not in title.inner_text().strip(), "the summary is one line"
    expect(group.locator(".content")).to_have_count(0)  # Sources start closed

    title.click()
    group.locator("blockquote").first.wait_for()
    joined = group.evaluate(
        "g => [...g.querySelectorAll('blockquote')].map((q) => q.innerText).join('\\n')"
    )
    assert "|" not in joined, joined
    assert "---" not in joined, joined
    assert not re.search(r"\]\(|^#", joined, re.MULTILINE), joined
    row_text = re.compile(r"[A-Z][\w ]+: [^;\n]+; [A-Z][\w ]+: ")
    assert row_text.search(joined), f"no table row read as label: value: {joined}"


def test_copy_gives_clean_text_with_absolute_links(sample: Served, browser: Any) -> None:
    page = _page(browser, permissions=["clipboard-read", "clipboard-write"])
    page.goto(sample.url, wait_until="load")
    sample.replies["next"] = Reply(text=ANSWER, chunk_chars=20, delay=0.01)

    _answered(page, "What is the emergency loan interest rate?")
    page.locator('.message-buttons button[aria-label="Copy message"]').last.click()
    copied = ""
    for _ in range(40):  # the copy is written after the collapsed Sources are read
        copied = page.evaluate("navigator.clipboard.readText()")
        if copied:
            break
        page.wait_for_timeout(50)

    assert "12% per annum" in copied
    assert "&gt;" not in copied, copied
    assert "&amp;" not in copied, copied
    assert "Loan Policy > " in copied
    origin = sample.url.rstrip("/")
    assert f"({origin}/doc/loan-policy.md" in copied, copied
    assert "(/doc/" not in copied
    assert "question:" not in copied, "the trace is no part of the answer"


def test_stopped_answer_keeps_its_sources_and_says_stopped(sample: Served, browser: Any) -> None:
    page = _page(browser)
    page.goto(sample.url, wait_until="load")
    sample.replies["next"] = Reply(
        text="According to the Loan Policy [1], " + "and then " * 200, chunk_chars=8, delay=0.2
    )

    ask(page, "Tell me about the emergency loan interest rate, slowly")
    page.locator(".bot").get_by_text("According to the Loan Policy", exact=False).first.wait_for()
    page.wait_for_timeout(600)
    page.locator("button.stop-button").first.click()

    row = page.locator(".message-row.bot-row").last
    row.get_by_text("Stopped", exact=False).first.wait_for()
    expect(row).to_contain_text("[1]")
    sources = row.locator(".thought-group .title").filter(has_text=re.compile(r"^\s*Sources\s*$"))
    sources.first.wait_for()
    sources.first.click()
    row.get_by_role("link", name="open section").first.wait_for()
    expect(row).to_contain_text(re.compile(r"\*?\[1\] [A-Z]"))  # the answer's [1] resolves


def test_unreachable_model_answers_from_the_passages_with_a_short_note(
    dev_unreachable: Served, browser: Any, caplog: pytest.LogCaptureFixture
) -> None:
    page = _page(browser)
    page.goto(dev_unreachable.url, wait_until="load")
    with caplog.at_level(logging.WARNING, logger="assistant"):
        row = _answered(
            page, "What happens to my account if I violate the acceptable use policies?"
        )

    expect(row).to_contain_text("not available right now")
    expect(page.locator(".message-wrap")).not_to_contain_text("ASSISTANT_LLM")
    text = row.inner_text()
    assert re.search(r"\[\d\]", text) or "do not appear to cover" in text, text
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "answering offline" in logged, logged
    assert "ASSISTANT_LLM_BASE_URL" in logged, "the operator's detail is not logged"


def test_filters_show_in_the_header_reach_a_no_match_answer_and_clear_with_the_chat(
    sample: Served, browser: Any
) -> None:
    page = _page(browser)
    page.goto(sample.url, wait_until="load")
    page.get_by_text("Filters", exact=True).first.click()
    page.get_by_label("Documents").first.click()
    page.get_by_text("Staff Leave Policy (hr/leave-policy.md)").first.click()
    page.keyboard.press("Escape")
    page.get_by_text("Filters · 1 document", exact=True).first.wait_for()

    # With a model the weak match goes to it (issue 25); its "not covered" is the no-match answer.
    sample.replies["next"] = Reply(text="The policy documents do not cover this.", delay=0.01)
    row = _answered(
        page, "What is the emergency loan interest rate for a development loan guarantor?"
    )
    expect(row.locator(".message").first).to_contain_text("with the filter Staff Leave Policy")
    answer = row.locator(".message").first.inner_text()
    lines = [line for line in answer.splitlines() if line.strip().startswith("Staff Leave")]
    assert len(lines) <= 1, f"the title repeats on every line: {lines}"
    expect(row.get_by_text("Closest sections (no good match)")).to_have_count(0)  # not twice

    row.locator(".thought-group .title").filter(has_text="Trace").first.click()
    trace = row.locator("pre").last
    expect(trace).to_contain_text("filters: Staff Leave Policy")
    trace_text = trace.inner_text()
    assert "SearchFilters(" not in trace_text
    assert " — Staff Leave Policy" in trace_text, "chunks named by id only"
    assert trace_text.count("first token:") == 1
    assert trace.evaluate("p => p.scrollWidth <= p.clientWidth + 1"), "trace lines do not wrap"

    page.locator('button[aria-label="Clear"]').first.click()
    page.get_by_text("Filters", exact=True).first.wait_for()
    expect(page.get_by_text("Filters · 1 document")).to_have_count(0)


def test_new_chat_empties_the_conversation(sample: Served, browser: Any) -> None:
    page = _page(browser)
    page.goto(sample.url, wait_until="load")
    sample.replies["next"] = Reply(text=ANSWER, chunk_chars=20, delay=0.01)
    _answered(page, "What is the emergency loan interest rate?")

    page.get_by_role("button", name="New chat").click()

    page.locator(".message-row").first.wait_for(state="detached")
    expect(page.locator(".message-row")).to_have_count(0)


def test_viewer_lands_on_and_highlights_the_cited_passage(sample: Served, browser: Any) -> None:
    page = _page(browser, 1280, 720)
    page.goto(sample.url, wait_until="load")
    sample.replies["next"] = Reply(text=ANSWER, chunk_chars=20, delay=0.01)
    # Its first source is the Interest sub-section of Emergency Loans (after Purpose).
    row = _answered(
        page,
        "Do Emergency Loans carry interest on a reducing balance, and is a processing fee "
        "charged on an Emergency Loan?",
    )
    row.locator(".thought-group .title").filter(has_text="source").first.click()
    link = row.get_by_role("link", name="open section").first
    href = link.get_attribute("href")
    assert href is not None
    assert href.endswith("#cited"), href

    page.goto(sample.url.rstrip("/") + href, wait_until="load")
    mark = page.locator("mark#cited")
    assert "12% per annum" in mark.inner_text()
    section = mark.evaluate("m => m.closest('section').id")
    assert section == "interest", f"landed in {section!r}"
    box = _box(mark)
    assert 0 <= box["y"] <= 720 - box["height"], f"the passage is off screen: {box}"
    crumbs = page.locator("nav.crumbs")
    assert "Emergency Loans > Interest" in crumbs.inner_text()
    crumb_box = _box(crumbs)
    assert 0 <= crumb_box["y"] < 100, "the breadcrumb scrolled away"
    assert page.get_by_role("link", name=re.compile("Back to the chat")).count() == 1
