"""Issue 39 item 3 in chromium: a reload while an answer is written keeps the turn.

The chat saves a conversation in the browser when an answer's event ends; a reload
before then used to lose the question and the answer so far. Now the server keeps the
turn per browser (`assistant.web.in_flight`) and the next load puts it back, marked
as interrupted, and saves it, so New chat lists it under Previous conversations. In
model mode (a slow fake model, reloaded mid-stream) and offline (reloaded as soon as
the question is sent).

Run one file at a time: ``python -m pytest tests/e2e/test_browser_reload_turn.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import SAMPLE_POLICIES
from tests.support.chromium import browser_marks, open_page
from tests.support.openai_server import Reply
from tests.support.served_ui import Served, app_settings, ask, behind_fake_model, launched

pytestmark = [*browser_marks, pytest.mark.slow]

SLOW = Reply(text="Emergency Loans carry interest at 12% per annum [1]. " * 40, delay=0.1)
NOTE = "Interrupted: the page was reloaded"


@pytest.fixture(scope="module")
def modelled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    pytest.importorskip("playwright.sync_api")
    index = tmp_path_factory.mktemp("reload-model") / "index"
    with behind_fake_model(index, reply=SLOW, timeout=30) as app:
        yield app


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    pytest.importorskip("playwright.sync_api")
    index = tmp_path_factory.mktemp("reload-offline") / "index"
    with launched(app_settings(index), SAMPLE_POLICIES) as app:
        yield app


def _opened(browser: Any, served: Served) -> Any:
    page = open_page(browser.new_context(viewport={"width": 1440, "height": 900}))
    page.goto(served.url, wait_until="load")
    page.locator("#chat-input textarea").wait_for()
    return page


def _previous(page: Any) -> list[str]:
    page.get_by_role("button", name="New chat").click()
    page.locator(".message-row").first.wait_for(state="detached")
    menu = page.get_by_label("Previous conversations")
    menu.click()
    options = page.get_by_role("option")
    options.first.wait_for()
    return [t.strip() for t in options.all_inner_texts()]


def test_a_reload_mid_stream_keeps_the_question_and_the_answer_so_far(
    modelled: Served, browser: Any
) -> None:
    page = _opened(browser, modelled)
    question = "What is the emergency loan interest rate, at length?"
    ask(page, question)
    page.locator(".bot").get_by_text("12% per annum", exact=False).first.wait_for()
    page.reload(wait_until="load")
    row = page.locator(".message-row.user-row").first
    row.wait_for()
    assert row.inner_text().strip() == question
    answer = page.locator(".message-row.bot-row").first
    answer.get_by_text(NOTE, exact=False).wait_for()
    assert "Emergency Loans carry interest at 12% per annum" in answer.inner_text()
    assert any(question[:30] in entry for entry in _previous(page))


def test_an_offline_reload_right_after_sending_keeps_the_turn(
    offline: Served, browser: Any
) -> None:
    page = _opened(browser, offline)
    question = "How many days of annual leave do staff get?"
    with page.expect_request(lambda r: "queue/join" in r.url):
        ask(page, question)
    page.reload(wait_until="load")
    row = page.locator(".message-row.user-row").first
    row.wait_for()
    assert row.inner_text().strip() == question
    page.locator(".message-row.bot-row").first.wait_for()
    assert any(question[:30] in entry for entry in _previous(page))
