"""The change list and the webhook know each change's audience (issue 27: D8, D9, D28).

Real ingests (fake embedder) into a real index directory, a real HTTP receiver on
127.0.0.1 for the webhook.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from assistant.index.changes import read_changes, shown_url
from assistant.types import ANONYMOUS, DocumentChange, User
from tests.index.test_change_list import run

RESTRICTED = """---
audience: [hr]
---
# Branch Plan

## Opening Hours

Branches open at 8.

## Redundancies at Eldoret Branch 2027

Twelve posts go.
"""
PUBLISHED = """---
audience: everyone
---
# Branch Plan

## Opening Hours

Branches open at 8.
"""
HR = User("hr-person", frozenset({"hr"}))


class _Receiver(BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict[str, object]]] = []
    status: ClassVar[int] = 204

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        type(self).bodies.append(json.loads(self.rfile.read(length)))
        self.send_response(type(self).status)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        del format, args


@pytest.fixture
def hook() -> Iterator[tuple[str, list[dict[str, object]]]]:
    _Receiver.bodies, _Receiver.status = [], 204
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/changes", _Receiver.bodies
    finally:
        server.shutdown()
        server.server_close()


def test_a_change_records_the_audience_before_and_after(tmp_path: Path) -> None:
    """D8: a restricted-era change stays restricted after the document is published."""
    docs, index = tmp_path / "docs", tmp_path / "index"
    docs.mkdir()
    (docs / "branch-plan.md").write_text(RESTRICTED)
    run(docs, index)
    (docs / "branch-plan.md").write_text(PUBLISHED)
    run(docs, index)
    added, published = read_changes(index)
    assert (added.old_audience, added.new_audience) == (("hr",), ("hr",))
    assert (published.old_audience, published.new_audience) == (("hr",), ())
    assert "Branch Plan > Redundancies at Eldoret Branch 2027" in published.sections_removed
    for change in (added, published):
        assert not change.readable_by(ANONYMOUS)
        assert change.readable_by(HR)
    (docs / "branch-plan.md").write_text(PUBLISHED.replace("at 8", "at 9"))
    run(docs, index)
    assert read_changes(index)[-1].readable_by(ANONYMOUS)


def test_a_change_line_written_before_audiences_is_for_administrators_only() -> None:
    old = json.loads('{"time": "t", "source": "a.md", "title": "A", "change": "edited"}')
    change = DocumentChange(**old)
    assert not change.readable_by(HR)
    assert change.readable_by(User("root", frozenset({"admin"})))


def test_the_webhook_never_sends_a_restricted_document(
    tmp_path: Path, hook: tuple[str, list[dict[str, object]]]
) -> None:
    """D9: HR-only titles and headings stay out of the webhook; public ones carry audiences."""
    url, bodies = hook
    docs, index = tmp_path / "docs", tmp_path / "index"
    (docs / "hr").mkdir(parents=True)
    (docs / ".access").write_text("hr/** -> hr\n")
    (docs / "hr" / "redundancy.md").write_text(
        "# Redundancy Plan\n\n## Branch Closures in Eldoret\n\nTwo branches close.\n"
    )
    (docs / "travel.md").write_text("# Travel\n\n## Per Diem\n\nKES 4,000.\n")
    run(docs, index, webhook=url)
    assert len(bodies) == 1
    text = json.dumps(bodies)
    assert "Redundancy" not in text
    assert "Eldoret" not in text
    changes = bodies[0]["changes"]
    assert isinstance(changes, list)
    (change,) = changes
    assert change["source"] == "travel.md"
    assert change["old_audience"] == change["new_audience"] == []
    (docs / "hr" / "redundancy.md").write_text("# Redundancy Plan\n\nNo closures.\n")
    run(docs, index, webhook=url)
    assert len(bodies) == 1  # only a restricted document changed: nothing is posted


@pytest.fixture
def secret_hook(hook: tuple[str, list[dict[str, object]]]) -> str:
    url, _ = hook
    return url.replace("/changes", "/services/T000/B000/XOXB-SECRET-TOKEN?key=abc123")


def test_the_webhook_warning_never_shows_the_secret(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, secret_hook: str
) -> None:
    """D28: a failing or refusing webhook is named by scheme and host only."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "travel.md").write_text("# Travel\n\nKES 4,000.\n")
    _Receiver.status = 500
    with caplog.at_level(logging.WARNING, logger="assistant.index.ingest"):
        run(docs, tmp_path / "index", webhook=secret_hook)
        (docs / "travel.md").write_text("# Travel\n\nKES 5,000.\n")
        dead = "http://user:pw-SECRET@127.0.0.1:9/services/XOXB-SECRET-TOKEN?key=abc123"
        run(docs, tmp_path / "index", webhook=dead)
    assert caplog.text.count("change webhook") == 2
    for secret in ("XOXB", "SECRET", "abc123", "services", "pw-"):
        assert secret not in caplog.text
    assert "http://127.0.0.1:9/…" in caplog.text


def test_shown_url_keeps_scheme_host_and_port_only() -> None:
    assert shown_url("https://hooks.slack.com/services/T/B/tok") == "https://hooks.slack.com/…"
    assert shown_url("http://[::1]:8039/x?key=1") == "http://[::1]:8039/…"
    assert shown_url("not a url") == "?://?/…"
