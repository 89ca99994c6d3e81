"""The ``ask`` command line and the API write the chat's audit record, on a real SQLite file.

Who asked is the one the channel resolves (``--as`` or the local operator; the API
key's user); a locked database or one whose directory cannot exist costs a logged
warning, never the answer.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from assistant.api.keys import KeyStore
from assistant.api.server import build_api
from assistant.audit.log import AuditLog
from assistant.config import APISettings, Settings
from assistant.session import Desk
from assistant.types import AuditRecord, DocMeta
from tests.support.cli_index import build_index, run_cli
from tests.support.ui_fakes import FakeService

QUESTION = "What interest do emergency loans carry?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_index(tmp_path_factory.mktemp("channels"))


def exported(index: Path, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    ran = run_cli(["audit", "export", "--index", str(index)], env=env)
    assert ran.code == 0, ran.err
    return [json.loads(line) for line in ran.out.splitlines()]


def test_ask_records_each_answer_as_the_chat_does(index: Path, tmp_path: Path) -> None:
    env = {"ASSISTANT_AUDIT_DB": str(tmp_path / "audit.sqlite3")}
    ran = run_cli(["ask", "--index", str(index), QUESTION], env=env)
    assert ran.code == 0, ran.err
    lines = '{"id": 1, "question": "How many days of annual leave?"}\n'
    batch = run_cli(["ask", "--json", "--index", str(index)], stdin=lines, env=env)
    assert batch.code == 0, batch.err

    records = {r["question"]: r for r in exported(index, env)}
    assert set(records) == {QUESTION, "How many days of annual leave?"}
    record = records[QUESTION]
    assert record["user"] == "local"  # the operator: no --as
    assert record["answer"] in ran.out
    assert record["mode"] == "extractive"
    assert record["sources"][0]["source"] == "loans.md"
    assert record["sources"][0]["version"] or record["sources"][0]["effective_date"] is not None
    assert "ask total" in record["timings_ms"]
    assert record["feedback"] is None


def test_ask_no_audit_records_nothing(index: Path, tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    ran = run_cli(
        ["ask", "--no-audit", "--index", str(index), QUESTION],
        env={"ASSISTANT_AUDIT_DB": str(db)},
    )
    assert ran.code == 0, ran.err
    assert "12%" in ran.out
    assert not db.exists()


def test_ask_answers_when_the_audit_directory_cannot_exist(
    index: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    env = {"ASSISTANT_AUDIT_DB": str(blocker / "audit.sqlite3")}
    with caplog.at_level(logging.WARNING, logger="assistant.audit"):
        ran = run_cli(["ask", "--index", str(index), QUESTION], env=env)
    assert ran.code == 0, ran.err
    assert "12%" in ran.out
    assert "audit log unavailable" in caplog.text


@pytest.mark.slow
def test_ask_answers_while_another_process_locks_the_database(
    index: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "audit.sqlite3"
    AuditLog(db).close()  # the file and its tables exist
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with caplog.at_level(logging.WARNING, logger="assistant.audit"):
            ran = run_cli(
                ["ask", "--index", str(index), QUESTION], env={"ASSISTANT_AUDIT_DB": str(db)}
            )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert ran.code == 0, ran.err
    assert "12%" in ran.out
    # Which word comes first depends on the clock: a write gives up on the lock after
    # 5 s ("database is locked"), the command stops waiting for its writes 6 s after
    # the answer ("left unwritten"); a loaded run saw only the second. Either way the
    # answer came and the operator is told the audit log was locked.
    assert "database is locked" in caplog.text or "locked or slow" in caplog.text


def _api(tmp_path: Path, log: AuditLog) -> tuple[TestClient, str]:
    keys = KeyStore(tmp_path / "keys.json")
    secret, _ = keys.add("amina", ("staff",))
    settings = Settings(api=APISettings())
    meta = lambda source: DocMeta(title="Loan Policy", version="4")  # noqa: E731
    app = build_api(Desk(FakeService(), settings=settings, log=log, doc_meta=meta), keys=keys)
    return TestClient(app), secret


def _records(log: AuditLog) -> list[AuditRecord]:
    assert log.flush()
    return [record for record, _ in log.store.records()]


def test_the_api_records_answers_under_the_key_user(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.sqlite3")
    client, secret = _api(tmp_path, log)
    headers = {"Authorization": f"Bearer {secret}"}
    body = {
        "model": Settings().store.collection,
        "messages": [{"role": "user", "content": QUESTION}],
    }
    whole = client.post("/v1/chat/completions", json=body, headers=headers)
    assert whole.status_code == 200, whole.text
    streamed = client.post("/v1/chat/completions", json={**body, "stream": True}, headers=headers)
    assert streamed.status_code == 200
    assert "[DONE]" in streamed.text

    records = _records(log)
    log.close()
    assert len(records) == 2
    for record in records:
        assert record.user == "amina"
        assert record.question == QUESTION
        assert record.answer.startswith("Emergency loans cost 12% a year [1]")
        assert record.sources[0].version == "4"
        assert record.sources[0].cited
        assert "api total" in dict(record.timings_ms)
    shown = whole.json()["choices"][0]["message"]["content"]
    assert shown.startswith(records[0].answer)


def test_a_refused_call_is_not_recorded(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.sqlite3")
    client, _ = _api(tmp_path, log)
    body = {
        "model": Settings().store.collection,
        "messages": [{"role": "user", "content": QUESTION}],
    }
    refused = client.post("/v1/chat/completions", json=body, headers={"Authorization": "Bearer x"})
    assert refused.status_code == 401
    assert _records(log) == []
    log.close()


def test_the_api_answers_while_the_audit_database_is_locked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "audit.sqlite3"
    AuditLog(db).close()
    log = AuditLog(db, busy_timeout=0.2)
    client, secret = _api(tmp_path, log)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    body = {
        "model": Settings().store.collection,
        "messages": [{"role": "user", "content": QUESTION}],
    }
    try:
        with caplog.at_level(logging.WARNING, logger="assistant.audit"):
            answered = client.post(
                "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {secret}"}
            )
            assert log.flush()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    log.close()
    assert answered.status_code == 200
    assert "12% a year" in answered.json()["choices"][0]["message"]["content"]
    assert "the chat goes on" in caplog.text or "unavailable" in caplog.text
