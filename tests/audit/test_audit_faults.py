"""The audit log under faults: its file deleted or replaced, a clock far ahead, a read-only mount.

Issue 28, findings D10, D19 and D27, on real SQLite files (and a real read-only bind
mount where the test runs as root).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import logging
import resource
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant.audit.log import AuditLog
from assistant.cli.search import main
from tests.support.audit_records import record, written


def _ago(days: int) -> str:
    return (dt.datetime.now(dt.UTC) - dt.timedelta(days=days)).isoformat(timespec="seconds")


def _ids(path: Path) -> list[str]:
    with sqlite3.connect(path) as connection:
        return [row[0] for row in connection.execute("SELECT id FROM answers ORDER BY id")]


def test_records_after_the_database_is_deleted_go_to_a_new_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """D10: deleting the file under a running log used to lose every later record silently."""
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    log.record(record(1))
    written(log)
    for file in tmp_path.glob("audit.sqlite3*"):
        file.unlink()
    with caplog.at_level(logging.WARNING, logger="assistant.audit.log"):
        for n in (2, 3, 4):
            log.record(record(n))
        assert [r.record_id for r, _ in written(log)] == ["r00002", "r00003", "r00004"]
    log.close()
    assert "deleted or replaced" in caplog.text
    assert _ids(path) == ["r00002", "r00003", "r00004"]


def test_records_after_the_database_is_replaced_go_to_the_new_file(tmp_path: Path) -> None:
    """D10: a file moved aside and another put in its place (a restore, a rotation)."""
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    log.record(record(1))
    written(log)
    log.close()
    shutil.copy(path, tmp_path / "copy.sqlite3")
    log = AuditLog(path)
    log.record(record(2))
    written(log)
    for side in tmp_path.glob("audit.sqlite3-*"):  # a restore takes the whole database
        side.unlink()
    (tmp_path / "copy.sqlite3").replace(path)  # back to the copy holding r00001 only
    log.record(record(3))
    written(log)
    log.close()
    assert _ids(path) == ["r00001", "r00003"]


def test_a_clock_far_ahead_of_the_history_does_not_purge_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """D19: history whose newest record is 400 days old, retention 365 days.

    Seen from the writer, that is the clock 400 days ahead of every record: retention
    counts from the newest record, so only what is over 365 days older than it goes.
    """
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    log.record(record(1, time=_ago(800)))
    for n in range(2, 6):
        log.record(record(n, time=_ago(400)))
    log.close()
    with caplog.at_level(logging.WARNING, logger="assistant.audit.log"):
        kept = AuditLog(path, retention_days=365)
        rows = written(kept)
        kept.close()
    assert [r.record_id for r, _ in rows] == ["r00002", "r00003", "r00004", "r00005"]
    assert "ahead of the newest audit record" in caplog.text


def test_retention_still_purges_by_the_clock_when_the_history_is_current(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    log.record(record(1, time=_ago(400)))
    log.record(record(2, time=_ago(0)))
    log.close()
    kept = AuditLog(path, retention_days=365)
    assert [r.record_id for r, _ in written(kept)] == ["r00002"]
    kept.close()


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A folder made read-only by a bind mount (root ignores mode bits, not ``ro``)."""
    target = tmp_path / "ro"
    target.mkdir()
    yield target
    if subprocess.run(["mountpoint", "-q", str(target)], check=False).returncode == 0:
        subprocess.run(["umount", str(target)], check=True)  # fails loudly if a file is open


def _mount_read_only(target: Path) -> None:
    bound = subprocess.run(
        ["mount", "--bind", str(target), str(target)], capture_output=True, text=True
    )
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount here (needs root): {bound.stderr.strip()}")
    subprocess.run(["mount", "-o", "remount,bind,ro", str(target)], check=True)


def test_audit_export_reads_a_database_on_a_read_only_mount(read_only: Path) -> None:
    """D27: a WAL database on a read-only volume used to give 'cannot read the audit log'."""
    path = read_only / "audit.sqlite3"
    log = AuditLog(path)
    log.record(record(1))
    log.record(record(2))
    log.close()
    _mount_read_only(read_only)
    assert not (read_only / "audit.sqlite3-shm").exists()
    out = io.StringIO()
    env = {"ASSISTANT_INDEX": str(read_only / "index"), "ASSISTANT_AUDIT_DB": str(path)}
    assert main(["audit", "export"], environ=env, stdout=out) == 0
    assert [json.loads(line)["id"] for line in out.getvalue().splitlines()] == [
        "r00001",
        "r00002",
    ]


def test_a_database_overwritten_with_garbage_never_blocks_or_breaks_the_chat(
    tmp_path: Path,
) -> None:
    """Issue 28 (own round): random bytes written over a live database."""
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    log.record(record(1))
    written(log)
    with path.open("r+b") as damaged:
        damaged.write(bytes(range(256)) * 64)
    log.record(record(2))  # never raises: the chat goes on
    assert log.flush()
    log.close()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs (root only; skipped otherwise)."""
    target = tmp_path / "small"
    target.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(target)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    yield target
    subprocess.run(["umount", "-l", str(target)], check=True)


def test_a_full_disk_under_the_audit_log_loses_only_what_did_not_fit(
    small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 28 (own round): records while the disk is full are dropped with a warning;
    the ones before stay readable, and writing resumes once space is freed."""
    path = small_disk / "audit.sqlite3"
    log = AuditLog(path)
    log.record(record(1))
    written(log)
    filler = small_disk / "filler"
    with filler.open("wb", buffering=0) as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * 4096)
            out.flush()
    with caplog.at_level(logging.WARNING, logger="assistant.audit.log"):
        for n in range(2, 40):
            log.record(record(n, answer="x" * 4000))
        assert log.flush(timeout=60)
    assert "lost" in caplog.text or "full" in caplog.text
    filler.unlink()
    log.record(record(99))
    ids = [r.record_id for r, _ in written(log)]
    log.close()
    assert ids[0] == "r00001"
    assert ids[-1] == "r00099"


@contextlib.contextmanager
def _file_size_limit(limit: int) -> Iterator[None]:
    """Limit every file this process writes to ``limit`` bytes (Python ignores SIGXFSZ,
    so a write past it fails with EFBIG, as on a full disk); runs anywhere, no root."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def test_a_file_size_limit_under_the_audit_log_loses_only_what_did_not_fit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Own round O18: the audit database reaches the file size limit (``ulimit -f``): the
    chat is never blocked, what did not fit is dropped with a warning, the rest stays."""
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    log.record(record(1))
    written(log)
    limit = path.stat().st_size + 64 * 1024
    with caplog.at_level(logging.WARNING, logger="assistant.audit.log"), _file_size_limit(limit):
        for n in range(2, 60):
            log.record(record(n, answer="x" * 4000))
        assert log.flush(timeout=60)
    assert "lost" in caplog.text or "full" in caplog.text or "large" in caplog.text
    log.record(record(99))
    ids = [r.record_id for r, _ in written(log)]
    log.close()
    assert ids[0] == "r00001"
    assert ids[-1] == "r00099"
    assert 1 < len(ids) < 60  # some fitted, the rest were dropped
