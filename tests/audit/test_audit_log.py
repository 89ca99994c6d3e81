"""The audit log on a real SQLite file: records, feedback, modes, concurrency, failures, export."""

from __future__ import annotations

import io
import json
import logging
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from assistant.audit.log import AuditLog, open_audit_log
from assistant.audit.recording import make_record
from assistant.audit.store import AuditStore
from assistant.cli.search import main
from assistant.config import Settings
from assistant.retrieval.evaluation import load_questions
from assistant.types import DocMeta, Feedback, SearchFilters, User
from tests.support.audit_records import record, written
from tests.support.paths import ROOT
from tests.support.ui_fakes import FakeStream, loan_hit


def test_a_record_comes_back_from_the_file_with_every_field(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.sqlite3")
    log.record(record(1))
    rows = written(log)
    log.close()
    assert rows == [(record(1), None)]
    journal = sqlite3.connect(tmp_path / "audit.sqlite3").execute("PRAGMA journal_mode").fetchone()
    assert journal[0] == "wal"


def test_a_later_thumb_replaces_the_earlier_one(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.sqlite3")
    log.record(record(1))
    log.feedback(Feedback("r00001", "2026-11-30T09:01:00+00:00", "amina", "up"))
    log.feedback(
        Feedback(
            "r00001",
            "2026-11-30T09:02:00+00:00",
            "amina",
            "down",
            reason="rate is out of date",
            correction="It is 12% since 2026.",
        )
    )
    (only,) = written(log)
    log.close()
    assert only[1] is not None
    assert (only[1].rating, only[1].reason, only[1].correction) == (
        "down",
        "rate is out of date",
        "It is 12% since 2026.",
    )


def test_anonymised_mode_stores_a_keyed_hash_never_the_name(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path, anonymised=True)
    log.record(record(1, user="amina.odhiambo"))
    log.record(record(2, user="amina.odhiambo"))
    log.record(record(3, user="brian"))
    rows = written(log)
    log.close()
    users = [r.user for r, _ in rows]
    assert users[0] == users[1] != users[2]
    assert all(u.startswith("user-") for u in users)
    for file in tmp_path.iterdir():
        assert b"amina.odhiambo" not in file.read_bytes()
    key = path.with_name(path.name + ".key")
    assert key.stat().st_mode & 0o777 == 0o600
    # The same key gives the same hash in a later process (the key is kept, not regenerated).
    again = AuditLog(path, anonymised=True)
    again.record(record(4, user="amina.odhiambo"))
    assert written(again)[-1][0].user == users[0]
    again.close()


def test_off_mode_opens_no_log(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {"ASSISTANT_INDEX": str(tmp_path / "index"), "ASSISTANT_AUDIT": "off"}
    )
    assert open_audit_log(settings) is None
    assert list(tmp_path.iterdir()) == []


def test_the_default_file_is_beside_the_index_and_the_path_is_configurable(tmp_path: Path) -> None:
    settings = Settings.from_env({"ASSISTANT_INDEX": str(tmp_path / "index")})
    assert settings.audit.audit_path(settings.store.path) == tmp_path / "index-audit.sqlite3"
    custom = Settings.from_env({"ASSISTANT_AUDIT_DB": str(tmp_path / "x.db")})
    assert custom.audit.audit_path(custom.store.path) == tmp_path / "x.db"


def test_retention_deletes_old_records_and_their_feedback(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    log.record(record(1, time="2001-01-01T00:00:00+00:00"))
    log.feedback(Feedback("r00001", "2001-01-01T00:00:00+00:00", "amina", "down"))
    log.record(record(2, time="2099-01-01T00:00:00+00:00"))
    written(log)
    log.close()
    kept = AuditLog(path, retention_days=30)
    rows = written(kept)
    kept.close()
    assert [r.record_id for r, _ in rows] == ["r00002"]
    count = sqlite3.connect(path).execute("SELECT count(*) FROM feedback").fetchone()[0]
    assert count == 0


def test_concurrent_threads_and_two_logs_on_one_file_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    logs = [AuditLog(path), AuditLog(path)]

    def chat(worker: int) -> None:
        for n in range(50):
            logs[worker % 2].record(record(worker * 1000 + n))

    threads = [threading.Thread(target=chat, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for log in logs:
        log.close()
    assert len(AuditStore(path).records()) == 400


WRITER = """
import sys
from pathlib import Path
from assistant.audit.log import AuditLog
from tests.support.audit_records import record
log = AuditLog(Path(sys.argv[1]), anonymised=sys.argv[3] == "anonymised")
for n in range(200):
    log.record(record(int(sys.argv[2]) * 1000 + n))
log.close(30)
"""


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["full", "anonymised"])
def test_two_processes_write_one_file(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "audit.sqlite3"
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(p), mode], cwd=ROOT)
        for p in (1, 2)
    ]
    assert [p.wait(120) for p in procs] == [0, 0]
    rows = AuditStore(path).records()
    assert len({r.record_id for r, _ in rows}) == 400
    # Both processes hash the name with the one key, however their first writes raced.
    assert len({r.user for r, _ in rows}) == 1


OPENER = """
import sys, time
from pathlib import Path
from assistant.audit.store import AuditStore
from assistant.errors import StoreError
folder, start = Path(sys.argv[1]), float(sys.argv[2])
failed = 0
for n in range(30):
    while time.time() < start + n * 0.1:
        pass
    try:
        with AuditStore(folder / f"audit-{n}.sqlite3").writer():
            pass
    except StoreError as exc:
        failed += 1
        print(exc, file=sys.stderr)
sys.exit(failed)
"""


@pytest.mark.slow
def test_two_processes_opening_a_new_file_at_once_both_get_a_writer(tmp_path: Path) -> None:
    # Both switch the new file to WAL at the same instant; before the open retried a
    # busy answer, about one such pair in four lost its writer, and its records.
    start = time.time() + 1.5
    procs = [
        subprocess.Popen([sys.executable, "-c", OPENER, str(tmp_path), str(start)], cwd=ROOT)
        for _ in (1, 2)
    ]
    assert [p.wait(120) for p in procs] == [0, 0]


def test_an_unwritable_place_costs_a_warning_not_the_chat(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the directory should be")
    log = AuditLog(blocker / "audit.sqlite3")
    with caplog.at_level(logging.WARNING, logger="assistant.audit.log"):
        log.record(record(1))  # must neither raise nor block
        log.feedback(Feedback("r00001", "2026-11-30T09:00:00+00:00", "amina", "up"))
        assert log.flush()
    log.close()
    assert "audit log unavailable" in caplog.text


def test_a_locked_database_drops_the_write_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path, busy_timeout=0.2)
    log.record(record(1))
    written(log)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    with caplog.at_level(logging.WARNING, logger="assistant.audit.log"):
        log.record(record(2))
        assert log.flush()
    holder.execute("ROLLBACK")
    log.record(record(3))  # the log recovers once the lock is gone
    ids = [r.record_id for r, _ in written(log)]
    log.close()
    assert "locked" in caplog.text
    assert ids == ["r00001", "r00003"]


def test_a_record_of_a_finished_stream_keeps_sources_versions_flags_and_timings() -> None:
    hit = loan_hit()
    stream = FakeStream(question="rate?", hits=(hit,), deltas=("12% [1].",), query="emergency rate")
    list(stream)
    answer = stream.answer()
    made = make_record(
        stream,
        answer,
        "12% [1].",
        question="rate?",
        user=User(name="amina"),
        filters=SearchFilters(sources=("loan-policy.md",)),
        timings_ms={"ui total": 55.0},
        doc_meta=lambda source: DocMeta(title="Loan Policy", version="3"),
    )
    assert made.user == "amina"
    assert made.query == "emergency rate"
    assert made.sources[0].chunk_id == hit.chunk.chunk_id
    assert (made.sources[0].version, made.sources[0].effective_date) == ("3", "2026-01-01")
    assert made.sources[0].cited
    assert dict(made.timings_ms)["ui total"] == 55.0
    assert not made.no_match


def run_cli(*argv: str, env: dict[str, str]) -> str:
    out = io.StringIO()
    assert main(list(argv), environ=env, stdout=out) == 0
    return out.getvalue()


def test_audit_export_writes_json_lines_csv_and_since(tmp_path: Path) -> None:
    env = {"ASSISTANT_INDEX": str(tmp_path / "index")}
    log = AuditLog(tmp_path / "index-audit.sqlite3")
    log.record(record(1, time="2026-10-01T08:00:00+00:00"))
    log.record(record(2, time="2026-11-30T08:00:00+00:00"))
    log.feedback(Feedback("r00002", "2026-11-30T08:01:00+00:00", "amina", "down", reason="wrong"))
    log.close()
    lines = [json.loads(x) for x in run_cli("audit", "export", env=env).splitlines()]
    assert [x["id"] for x in lines] == ["r00001", "r00002"]
    assert lines[1]["feedback"]["reason"] == "wrong"
    assert lines[1]["sources"][0]["version"] == "3"
    assert lines[1]["flags"] == {"no_match": False, "not_covered": False, "unsupported": []}
    since = run_cli("audit", "export", "--since", "2026-11-01", env=env).splitlines()
    assert [json.loads(x)["id"] for x in since] == ["r00002"]
    csv_text = run_cli("audit", "export", "--csv", env=env)
    assert csv_text.splitlines()[0].startswith("id,time,user,question")
    assert "loan-policy.md#3" in csv_text
    assert "wrong" in csv_text


def test_feedback_export_eval_gives_loadable_candidate_questions(tmp_path: Path) -> None:
    env = {"ASSISTANT_INDEX": str(tmp_path / "index")}
    log = AuditLog(tmp_path / "index-audit.sqlite3")
    for n in (1, 2, 3):
        log.record(record(n))
    log.feedback(
        Feedback(
            "r00001",
            "2026-11-30T09:01:00+00:00",
            "amina",  # only the answer's own user may rate it (issue 27, D7)
            "down",
            reason="old rate",
            correction="12% per annum on a reducing balance",
        )
    )
    log.feedback(Feedback("r00002", "2026-11-30T09:01:00+00:00", "amina", "down", reason="vague"))
    log.feedback(Feedback("r00003", "2026-11-30T09:01:00+00:00", "amina", "up"))
    log.close()
    candidates = tmp_path / "candidates.jsonl"
    candidates.write_text(run_cli("feedback", "export", "--eval", env=env))
    (question,) = load_questions(candidates)
    assert question.question.startswith("What is the emergency loan rate?")
    assert question.answer == "12% per annum on a reducing balance"
    assert question.gold[0].file == "loan-policy.md"
    downs = run_cli("feedback", "export", env=env).splitlines()
    assert len(downs) == 2


def test_a_bad_since_is_a_usage_error(tmp_path: Path) -> None:
    err = io.StringIO()
    code = main(
        ["audit", "export", "--since", "last week"], environ={}, stdout=io.StringIO(), stderr=err
    )
    assert code == 2
    assert "--since" in err.getvalue()
