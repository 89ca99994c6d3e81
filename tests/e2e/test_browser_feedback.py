"""Feedback, saved history and export in a real browser (Debian's chromium via Playwright).

The app is the real one (`build_app`) over the sample policies with the fake
embedder and `FakeOpenAIServer`, so it writes the real audit log beside the index.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.chromium import browser_marks, open_page
from tests.support.openai_server import Reply
from tests.support.served_ui import (
    ANSWER,
    Served,
    ask_and_wait_saved,
    behind_fake_model,
    rated_record,
)

pytestmark = browser_marks


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    pytest.importorskip("playwright.sync_api")
    index = tmp_path_factory.mktemp("audited") / "index"
    with behind_fake_model(index, reply=Reply(text=ANSWER, chunk_chars=6), timeout=10) as served:
        yield served


@pytest.fixture
def page(served: Served, browser: Any) -> Any:
    return open_page(browser.new_context(accept_downloads=True))


def _ask(page: Any, question: str) -> None:
    # The thumbs are clicked once the turn's last re-render (its save) is done: a click on
    # buttons Gradio is replacing may reach the old ones.
    ask_and_wait_saved(page, question)
    page.locator(".bot").get_by_text("12% per annum", exact=False).first.wait_for()


def test_thumbs_down_with_a_reason_lands_in_audit_export(served: Served, page: Any) -> None:
    page.goto(served.url, wait_until="load")
    question = "What is the emergency loan interest rate? (feedback)"
    _ask(page, question)
    page.get_by_role("button", name="Dislike", exact=True).first.click()
    page.get_by_label("What was wrong? (optional)").fill("It left out the processing fee")
    page.get_by_label("The right answer is... (optional)").fill("12% per annum, no fee")
    page.get_by_role("button", name="Send feedback").click()
    page.get_by_text("your feedback is stored", exact=False).wait_for()

    record = rated_record(served.index, question)
    assert record is not None
    assert record["feedback"]["rating"] == "down"
    assert record["feedback"]["reason"] == "It left out the processing fee"
    assert record["feedback"]["correction"] == "12% per annum, no fee"
    assert record["user"] == "anonymous"
    assert record["sources"][0]["source"] == "loan-policy.md"


def test_a_liked_conversation_exports_with_its_citations(served: Served, page: Any) -> None:
    page.goto(served.url, wait_until="load")
    question = "Kept: emergency loan interest rate?"
    _ask(page, question)
    # The record id rides on the answer message: a thumb reaches the record.
    page.get_by_role("button", name="Like", exact=True).first.click()

    record = rated_record(served.index, question)
    assert record is not None
    assert record["feedback"]["rating"] == "up"

    # One click downloads the file (issue 30, item 8).
    with page.expect_download() as download:
        page.get_by_role("button", name="Download conversation (Markdown)").click()
    markdown = Path(download.value.path()).read_text(encoding="utf-8")
    assert question in markdown
    assert "12% per annum" in markdown
    assert "Loan Policy" in markdown
    assert "effective 2026-01-01" in markdown
    assert f"({served.url}/doc/loan-policy.md?passage=" in markdown
