"""Identity and access in the running chat (issue 27): the real app on 127.0.0.1.

Two apps serve the same corpus: one trusts a proxy at 10.9.9.9 (so every request of
this test, from 127.0.0.1, is an outsider whatever it claims) and one trusts
127.0.0.1 (so the test is the proxy). Requests are real HTTP (httpx) and real Gradio
client sessions; the header and changes panel are read in Chromium.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from assistant.audit.log import AuditLog
from assistant.audit.store import AuditStore
from assistant.config import APISettings, Settings, UISettings
from assistant.index.ingest import ingest
from assistant.session import AnswerTurn, Desk, Request
from assistant.types import ANONYMOUS, User
from assistant.users import add_user
from assistant.web.feedback import NO_RECORD, RECORD_PREFIX, ChatAudit, owner_of
from assistant.web.panels import _export, export_base
from tests.conftest import FakeEmbedder, free_port
from tests.support.chromium import open_page
from tests.support.served_ui import Served, launched
from tests.support.ui_fakes import FakeService, loan_hit
from tests.test_access import ACCESS, CORPUS, settings_for, write

SALARY = "zorbex band"
SECRET = "florins"
ANN = {"X-Forwarded-User": "ann", "X-Forwarded-Groups": "hr"}
ADMIN = {"X-Forwarded-User": "mallory", "X-Forwarded-Groups": "admin"}
BRANCH_RESTRICTED = (
    "---\naudience: [hr]\n---\n# Branch Plan\n\n## Opening Hours\n\nBranches open at 8.\n\n"
    "## Redundancies at Eldoret Branch 2027\n\nTwelve posts go.\n"
)
BRANCH_PUBLIC = (
    "---\naudience: everyone\n---\n# Branch Plan\n\n## Opening Hours\n\nBranches open at 8.\n"
)


def _corpus(tmp: Path) -> tuple[Path, Settings]:
    docs = write(tmp / "docs", {**CORPUS, "branch-plan.md": BRANCH_RESTRICTED})
    (docs / ".access").write_text(ACCESS, encoding="utf-8")
    settings = settings_for(tmp / "idx")
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    (docs / "branch-plan.md").write_text(BRANCH_PUBLIC, encoding="utf-8")
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    return docs, settings


def _serve(tmp: Path, proxy: str, **ui: Any) -> Iterator[Served]:
    docs, settings = _corpus(tmp)
    settings = replace(settings, ui=UISettings(port=free_port(), trusted_proxies=(proxy,), **ui))
    with launched(settings, docs, ingest_first=False) as served:
        yield served


@pytest.fixture(scope="module")
def outsider_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Trusts a proxy at 10.9.9.9 only: requests from this test are never the proxy."""
    yield from _serve(tmp_path_factory.mktemp("outsider"), "10.9.9.9")


@pytest.fixture(scope="module")
def proxied_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Trusts 127.0.0.1: this test is the proxy."""
    yield from _serve(tmp_path_factory.mktemp("proxied"), "127.0.0.1")


def _doc(served: Served, path: str, headers: Any = None) -> int:
    return httpx.get(f"{served.url}/doc/{path}", headers=headers, timeout=30).status_code


def _chat(served: Served, question: str, headers: dict[str, str]) -> str:
    from gradio_client import Client

    client = Client(served.url, headers=headers, verbose=False)
    return json.dumps(client.submit(question, [], [], 4, api_name="/chat").result(timeout=120))


SPOOFS = [
    {"X-Forwarded-For": "10.9.9.9"},
    {"X-Forwarded-For": "203.0.113.9, 10.9.9.9"},
    {"X-Real-IP": "10.9.9.9"},
    {"Forwarded": "for=10.9.9.9"},
    {"X-Forwarded-For": "10.9.9.9", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "x"},
]


@pytest.mark.parametrize("spoof", SPOOFS)
def test_forwarded_for_never_borrows_a_proxys_trust(outsider_app: Served, spoof: Any) -> None:
    """D1: identity headers plus a trusted address in a forwarding header are ignored."""
    assert _doc(outsider_app, "hr/salaries.md", {**ADMIN, **spoof}) == 404
    assert _doc(outsider_app, "board.md", {**ADMIN, **spoof}) == 404
    assert _doc(outsider_app, "leave.md", {**ADMIN, **spoof}) == 200


def test_the_chat_ignores_a_spoofed_proxy_too(outsider_app: Served) -> None:
    answer = _chat(outsider_app, "What does the zorbex band pay?", {**ADMIN, **SPOOFS[0]})
    assert SECRET not in answer
    assert "salaries" not in answer


def test_a_real_proxy_adding_forwarded_for_keeps_its_identity(proxied_app: Served) -> None:
    """D1, the other face: single sign-on behind a proxy that adds X-Forwarded-For works."""
    headers = {**ANN, "X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"}
    assert _doc(proxied_app, "hr/salaries.md", headers) == 200
    assert SECRET in _chat(proxied_app, "What does the zorbex band pay?", headers)
    assert _doc(proxied_app, "hr/salaries.md") == 404  # the proxy naming nobody: anonymous


@pytest.mark.parametrize(
    "headers",
    [
        [
            ("X-Forwarded-User", "ann"),
            ("X-Forwarded-Groups", "staff"),
            ("X-Forwarded-Groups", "hr"),
        ],
        [("X-Forwarded-User", "bob"), ("X-Forwarded-User", "ann"), ("X-Forwarded-Groups", "hr")],
        [("X-Forwarded-User", "ann,bob"), ("X-Forwarded-Groups", "hr")],
        [("X-Forwarded-User", "ann"), ("X-Forwarded-Groups", "\u0445r")],  # Cyrillic kha
        [("X-Forwarded-User", "ann"), ("X-Forwarded-Groups", "\uff48\uff52")],  # full-width
    ],
)
def test_ambiguous_or_look_alike_identity_headers_grant_nothing(
    proxied_app: Served, headers: list[tuple[str, str]]
) -> None:
    sent = [(k, v.encode("utf-8")) for k, v in headers]  # raw UTF-8 bytes on the wire
    assert _doc(proxied_app, "hr/salaries.md", sent) == 404


def test_header_names_in_any_case_and_many_groups(proxied_app: Served) -> None:
    groups = ",".join([*(f"g{n}" for n in range(300)), "HR"])
    headers = [("x-FORWARDED-user", "ann"), ("X-FORWARDED-GROUPS", groups)]
    assert _doc(proxied_app, "hr/salaries.md", headers) == 200
    assert _doc(proxied_app, "board.md", headers) == 404


def test_the_viewer_checks_the_audience_of_the_bytes_it_serves(proxied_app: Served) -> None:
    """D2: content restricted on disk after the ingest is not shown to outsiders."""
    page = proxied_app.docs / "leave.md"
    original = page.read_text(encoding="utf-8")
    access = proxied_app.docs / ".access"
    try:
        page.write_text(
            "---\naudience: [hr]\n---\n# Leave\n\n## Executive\n\nThe CEO gets VIEWERLEAK days.\n",
            encoding="utf-8",
        )
        assert _doc(proxied_app, "leave.md") == 404
        assert _doc(proxied_app, "leave.md", ANN) == 200  # both versions are ann's to read
        page.write_text(original.replace("25 days", "26 days"), encoding="utf-8")
        access.write_text("leave.md -> hr\n", encoding="utf-8")  # the rules changed, no ingest
        assert _doc(proxied_app, "leave.md") == 404
        assert _doc(proxied_app, "leave.md", ANN) == 200
        access.write_text("** => hr\n", encoding="utf-8")  # unparsable: fail closed
        assert _doc(proxied_app, "leave.md", ANN) == 404
        assert (
            _doc(proxied_app, "board.md", {"X-Forwarded-User": "b", "X-Forwarded-Groups": "board"})
            == 200
        )
    finally:
        page.write_text(original, encoding="utf-8")
        access.write_text(ACCESS, encoding="utf-8")
    assert _doc(proxied_app, "leave.md") == 200


def _panel_and_header(served: Served, browser: Any, headers: dict[str, str]) -> tuple[str, str]:
    page = open_page(browser.new_context(extra_http_headers=headers))
    page.goto(served.url, wait_until="load")
    status = page.locator("#chat-status")
    status.get_by_text("document", exact=False).wait_for()
    header = status.inner_text()
    page.get_by_text("Recent policy changes").first.click()
    # The first ingest's documents are one "indexed" line (issue 30, item 5), listed last.
    page.get_by_text("indexed on", exact=False).first.wait_for()
    panel = (
        page.locator(".accordion, [class*=accordion]")
        .filter(has_text="Recent policy changes")
        .first.inner_text()
    )
    page.context.close()
    return header, panel


@pytest.mark.browser
def test_the_header_and_changes_panel_show_outsiders_nothing_restricted(
    proxied_app: Served, browser: Any
) -> None:
    """D20 and D8: counts of readable documents only; no restricted-era section names."""
    header, panel = _panel_and_header(proxied_app, browser, {})
    assert "2 documents" in header  # leave.md and branch-plan.md, of 4
    assert "last ingest" not in header
    assert "Branch Plan" not in panel  # restricted when added, published since
    assert "Eldoret" not in panel
    header, panel = _panel_and_header(proxied_app, browser, ANN)
    assert "3 documents" in header  # not board.md
    assert "Eldoret" in panel  # ann could read it before and after
    header, _ = _panel_and_header(proxied_app, browser, ADMIN)
    assert "4 documents" in header
    assert "last ingest" in header


def test_feedback_only_on_answers_of_the_same_user_or_session(tmp_path: Path) -> None:
    """D7: another session's (or user's) record id on a made-up history stores nothing."""
    log = AuditLog(tmp_path / "audit.sqlite3")
    audit = ChatAudit(log)
    service = FakeService(hits=(loan_hit(),), deltas=("12% [1].",))
    record_id = _answered(Desk(service, log=log), audit, owner=owner_of(ANONYMOUS, "session-a"))
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a", "metadata": {"id": RECORD_PREFIX + record_id}},
    ]
    for owner in (owner_of(ANONYMOUS, "session-b"), owner_of(User("carol"), "session-a")):
        assert audit.rate(history, 1, False, user=ANONYMOUS, owner=owner) == ("", NO_RECORD)
        assert audit.explain(record_id, "x", "=FORGED", user=ANONYMOUS, owner=owner) == NO_RECORD
        assert audit.rate(history, 1, "", user=ANONYMOUS, owner=owner) == ("", NO_RECORD)
    forged = [*history[:1], {**history[1], "metadata": {"id": RECORD_PREFIX + "deadbeef" * 4}}]
    assert (
        audit.rate(forged, 1, True, user=ANONYMOUS, owner=owner_of(ANONYMOUS, "session-a"))[0] == ""
    )
    assert log.flush()
    assert [f for _, f in AuditStore(log.path).records()] == [None]
    assert audit.rate(history, 1, True, user=ANONYMOUS, owner=owner_of(ANONYMOUS, "session-a"))[0]
    log.close()
    ((_, feedback),) = AuditStore(log.path).records()
    assert feedback is not None
    assert feedback.rating == "up"


def _answered(desk: Desk, audit: ChatAudit, *, owner: str) -> str:
    asked = desk.request("q")
    assert isinstance(asked, Request)
    turn = desk.ask(asked, door="ui")
    assert isinstance(turn, AnswerTurn)
    record_id = turn.run().record_id
    audit.own(record_id, owner)
    return record_id


def test_exported_links_never_come_from_the_host_header() -> None:
    """D25: ASSISTANT_PUBLIC_URL when set, else the UI's own address."""
    history = [
        {"role": "user", "content": "pay dates?"},
        {"role": "assistant", "content": "See [open section](/doc/hr/payroll.md#pay-dates)."},
    ]
    public = Settings(api=APISettings(public_url="https://policies.example.com"))
    base = export_base(public)
    assert base == "https://policies.example.com/"
    html = Path(_export(history, base, "html")).read_text(encoding="utf-8")
    assert "https://policies.example.com/doc/hr/payroll.md#pay-dates" in html
    assert (
        export_base(Settings(ui=UISettings(host="0.0.0.0", port=7861))) == "http://127.0.0.1:7861/"
    )


@pytest.mark.slow
def test_a_users_file_change_reaches_a_running_app(tmp_path: Path) -> None:
    """D3: a deleted user cannot log in; a demoted user's open session loses the group."""
    docs = write(tmp_path / "docs", CORPUS)
    (docs / ".access").write_text(ACCESS, encoding="utf-8")
    users = tmp_path / "users.toml"
    add_user(users, "ann", "pw-ann-123", ["hr"])
    add_user(users, "bob", "pw-bob-123", [])
    settings = replace(
        settings_for(tmp_path / "idx"), ui=UISettings(port=free_port(), users_file=users)
    )
    with launched(settings, docs) as served, httpx.Client(base_url=served.url) as ann:
        assert ann.post("/login", data={"username": "ann", "password": "pw-ann-123"}).is_success
        assert ann.get("/doc/hr/salaries.md").status_code == 200
        add_user(users, "ann", "pw-ann-123", [])
        users.write_text(users.read_text().split('[users."bob"]')[0], "utf-8")
        assert ann.get("/doc/hr/salaries.md").status_code == 404
        assert ann.get("/doc/leave.md").status_code == 200
        bob = httpx.post(served.url + "/login", data={"username": "bob", "password": "pw-bob-123"})
        assert not bob.is_success


def test_examples_drawn_from_the_corpus_never_come_from_a_restricted_document(
    tmp_path: Path,
) -> None:
    """An outsider's example questions: only documents everyone reads (new case)."""
    from assistant.retrieval.factory import open_retriever
    from assistant.web.examples import corpus_examples

    docs = write(
        tmp_path / "docs",
        {
            **CORPUS,
            "hr/faq.md": "# HR FAQ\n\n## What is the zorbex band?\n\nIt pays florins.\n",
        },
    )
    (docs / ".access").write_text(ACCESS, encoding="utf-8")
    settings = settings_for(tmp_path / "idx")
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    retriever = open_retriever(settings, embedder=FakeEmbedder())
    examples = " ".join(corpus_examples(retriever.snapshot(), retriever)).lower()
    for secret in ("zorbex", "salary", "board", "merger"):
        assert secret not in examples
