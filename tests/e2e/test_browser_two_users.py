"""Two users logged in to one server at once, in a real browser, see different documents.

Run: ``python -m pytest tests/e2e/test_browser_two_users.py -m browser``. Also: changing a
document's audience by re-ingesting while the UI runs holds from the next question.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from assistant.index.ingest import ingest
from assistant.users import add_user
from tests.conftest import FakeEmbedder
from tests.support.chromium import browser_marks, expect, launched_chromium, open_page
from tests.support.served_ui import (
    Served,
    app_settings,
    ask_and_wait_saved,
    launched,
    saved_conversations,
    traces,
    wait_for_save,
)

pytestmark = browser_marks

CORPUS = {
    "leave.md": "# Leave Policy\n\nStaff get 25 days of annual leave each year.\n",
    "hr/salaries.md": "# Salary Bands\n\nThe zorbex band pays executives nine florins.\n",
}
QUESTION = "What does the zorbex band pay executives?"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    pytest.importorskip("playwright.sync_api")
    base = tmp_path_factory.mktemp("browser-access")
    docs = base / "docs"
    for name, text in CORPUS.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")
    (docs / ".access").write_text("hr/** -> hr\n", encoding="utf-8")
    users = base / "users.toml"
    add_user(users, "ann", "pw-ann", ["hr"])
    add_user(users, "bob", "pw-bob", [])
    with launched(app_settings(base / "index", ui={"users_file": users}), docs) as served:
        yield served


def _logged_in(browser: Any, url: str, name: str, password: str) -> Any:
    context = browser.new_context()
    response = context.request.post(url + "/login", form={"username": name, "password": password})
    assert response.ok, response.status
    page = open_page(context, timeout_ms=30_000)
    page.goto(url + "/", wait_until="load")
    return page


def _ask(page: Any, question: str) -> str:
    """Ask and return the chat's text once the turn's last re-render (its save) is done."""
    ask_and_wait_saved(page, question)
    return str(page.locator(".message-wrap").inner_text())


def test_two_users_at_once_and_an_audience_changed_while_running(served: Served) -> None:
    with launched_chromium() as browser:
        try:
            ann = _logged_in(browser, served.url, "ann", "pw-ann")
            bob = _logged_in(browser, served.url, "bob", "pw-bob")
            ann.locator("textarea").first.fill(QUESTION)
            bob.locator("textarea").first.fill(QUESTION)
            saved = {page: saved_conversations(page) for page in (ann, bob)}
            ann.locator("textarea").first.press("Enter")  # both asked before either answered
            bob.locator("textarea").first.press("Enter")
            # Each chat is read once its turn's last re-render (its save) is done.
            for page in (ann, bob):
                traces(page).first.wait_for()
                wait_for_save(page, saved[page])
            expect(ann.locator(".message-wrap")).to_contain_text("nine florins")
            seen_by_bob = bob.locator(".message-wrap").inner_text()
            assert "florins" not in seen_by_bob
            assert "salaries" not in seen_by_bob
            assert "Salary Bands" not in seen_by_bob
            assert bob.goto(served.url + "/doc/hr/salaries.md").status == 404
            assert ann.goto(served.url + "/doc/hr/salaries.md").status == 200

            (served.docs / ".access").write_text("hr/** -> payroll\n", encoding="utf-8")
            ingest([served.docs], settings=served.settings, embedder=FakeEmbedder())
            ann.goto(served.url + "/", wait_until="load")
            # The reload brings back Ann's conversation (kept in the browser): start anew.
            ann.locator(".message-row.user-row").first.wait_for()
            ann.get_by_role("button", name="New chat").click()
            ann.locator(".message-row").first.wait_for(state="detached")
            after = _ask(ann, QUESTION)
            assert "florins" not in after
            assert ann.goto(served.url + "/doc/hr/salaries.md").status == 404
        finally:
            (served.docs / ".access").write_text("hr/** -> hr\n", encoding="utf-8")
