"""The audit database: one SQLite file, WAL mode, read and written only here.

Two tables: ``answers`` (one row per answered question, lists as JSON text) and
``feedback`` (at most one row per answer; a later thumb replaces the earlier).
Every connection waits up to `BUSY_TIMEOUT_S` for a lock, so several chat
processes and an export can share the file.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from assistant.errors import StoreError
from assistant.types import AuditRecord, AuditSource, Feedback, SearchFilters

__all__ = ["AuditStore", "AuditWriter"]

logger = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 5.0
_P = ParamSpec("_P")
_R = TypeVar("_R")
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS answers (
        id TEXT PRIMARY KEY, time TEXT NOT NULL, user TEXT NOT NULL, question TEXT NOT NULL,
        query TEXT NOT NULL, filters TEXT NOT NULL, sources TEXT NOT NULL, answer TEXT NOT NULL,
        mode TEXT NOT NULL, no_match INTEGER NOT NULL, not_covered INTEGER NOT NULL,
        unsupported TEXT NOT NULL, timings TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS answers_time ON answers (time)",
    """CREATE TABLE IF NOT EXISTS feedback (
        answer_id TEXT PRIMARY KEY, time TEXT NOT NULL, user TEXT NOT NULL,
        rating TEXT NOT NULL, reason TEXT NOT NULL, correction TEXT NOT NULL)""",
)


class AuditStore:
    """Reads and writes the audit database at ``path``.

    A store keeps no connection: `writer` opens one for a thread's lifetime,
    the read methods open one each.
    """

    def __init__(self, path: Path, *, timeout: float = BUSY_TIMEOUT_S) -> None:
        self.path = path
        self._timeout = timeout

    @contextmanager
    def writer(self) -> Iterator[AuditWriter]:
        """Yield a writer on a connection of its own (create the file and tables first).

        Raises:
            StoreError: The file cannot be created or opened.
        """
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _private(self.path)
            connection = self._open_initialised()
            for companion in ("-wal", "-shm"):
                _private(self.path.with_name(self.path.name + companion), create=False)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the audit log {self.path}: {exc}") from exc
        with closing(connection):
            yield AuditWriter(connection, self.path)

    def _open_initialised(self) -> sqlite3.Connection:
        """Connect in WAL mode with the tables made, waiting out a concurrent first open.

        Two processes opening a new file at once contend for the switch to WAL, and
        SQLite answers that contention "database is locked" at once rather than
        through its busy timeout; so a busy answer is retried until the timeout.
        """
        deadline = time.monotonic() + self._timeout
        while True:
            connection = self._connect()
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                for statement in _SCHEMA:
                    connection.execute(statement)
                connection.commit()
            except sqlite3.OperationalError as exc:
                connection.close()
                if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                    raise
                time.sleep(0.02)
            else:
                return connection

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=self._timeout)
        connection.row_factory = sqlite3.Row
        return connection

    def _connect_read_only(self) -> sqlite3.Connection:
        """Open for reading only; on a read-only mount, as an immutable file.

        A WAL database needs its ``-shm`` file even to be read; where that cannot be
        created (a read-only volume or backup), SQLite reads it as immutable: the
        main file as it is, which after a clean close holds every record.
        """
        uri = "file:" + urllib.parse.quote(str(self.path.resolve()))
        connection = sqlite3.connect(uri + "?mode=ro", timeout=self._timeout, uri=True)
        try:
            connection.execute("SELECT 1 FROM answers LIMIT 1")
        except sqlite3.OperationalError as exc:
            connection.close()
            if os.access(self.path.parent, os.W_OK) and not _read_only_mount(self.path):
                raise
            logger.info("reading the audit log %s as immutable (%s)", self.path, exc)
            connection = sqlite3.connect(uri + "?immutable=1", timeout=self._timeout, uri=True)
        connection.row_factory = sqlite3.Row
        return connection

    def records(self, *, since: str = "") -> list[tuple[AuditRecord, Feedback | None]]:
        """Return the records from ``since`` (an ISO date or time) on, oldest first.

        Raises:
            StoreError: The database cannot be read.
        """
        if not self.path.exists():
            return []
        query = (
            "SELECT a.*, f.time AS f_time, f.user AS f_user, f.rating, f.reason, f.correction "
            "FROM answers a LEFT JOIN feedback f ON f.answer_id = a.id "
            "WHERE a.time >= ? ORDER BY a.time, a.id"
        )
        try:
            with closing(self._connect_read_only()) as connection:
                rows = connection.execute(query, (since,)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the audit log {self.path}: {exc}") from exc
        return [(_record(row), _feedback(row)) for row in rows]


def _private(path: Path, *, create: bool = True) -> None:
    """Make ``path`` readable by its owner only, creating it empty (0600) if asked.

    SQLite gives the ``-wal`` and ``-shm`` files the mode of the database, so a
    database created 0600 keeps its companions private; one found readable by
    others (an older version made it with the umask) is tightened, with a warning.
    """
    if create:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    if mode & 0o077:
        path.chmod(0o600)
        logger.warning("%s was readable by others (%o): made it 0600", path, mode & 0o777)


def _translated(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Raise SQLite's errors (locked, disk full, read-only) as `StoreError`."""

    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except sqlite3.Error as exc:
            raise StoreError(f"audit log write failed: {exc}") from exc

    return wrapper


def _read_only_mount(path: Path) -> bool:
    """Whether ``path``'s file system is mounted read-only (root ignores mode bits)."""
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_dev, status.st_ino


class AuditWriter:
    """Statements on one open connection; each call is one transaction."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._connection = connection
        self._path = path
        self._identity = _identity(path)

    def moved(self) -> bool:
        """Whether the file at the store's path is no longer the one open here.

        A database deleted or replaced under a running writer would take every later
        write into the unlinked file; the writer reopens instead (finding D10).
        """
        return _identity(self._path) != self._identity

    @_translated
    def add_record(self, record: AuditRecord) -> None:
        """Insert ``record`` (a repeated id replaces the row)."""
        row = (
            record.record_id,
            record.time,
            record.user,
            record.question,
            record.query,
            json.dumps(asdict(record.filters)),
            json.dumps([asdict(s) for s in record.sources], ensure_ascii=False),
            record.answer,
            record.mode,
            int(record.no_match),
            int(record.not_covered),
            json.dumps(list(record.unsupported), ensure_ascii=False),
            json.dumps(dict(record.timings_ms)),
        )
        with self._connection:
            self._connection.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row
            )

    @_translated
    def add_feedback(self, feedback: Feedback) -> bool:
        """Store ``feedback``, replacing any earlier feedback on the same answer.

        Only the user the answer was recorded for may rate it: feedback on an
        answer of another user, or on no stored answer, stores nothing.

        Returns:
            Whether it was stored.
        """
        row = (
            feedback.record_id,
            feedback.time,
            feedback.user,
            feedback.rating,
            feedback.reason,
            feedback.correction,
            feedback.record_id,
            feedback.user,
        )
        with self._connection:
            cursor = self._connection.execute(
                "INSERT OR REPLACE INTO feedback SELECT ?, ?, ?, ?, ?, ? "
                "WHERE EXISTS (SELECT 1 FROM answers WHERE id = ? AND user = ?)",
                row,
            )
        return cursor.rowcount > 0

    @_translated
    def newest(self) -> str:
        """Return the time of the newest stored answer ("" when there is none)."""
        row = self._connection.execute("SELECT MAX(time) FROM answers").fetchone()
        return str(row[0]) if row and row[0] else ""

    @_translated
    def remove_feedback(self, record_id: str, user: str) -> bool:
        """Forget ``user``'s feedback on one of their answers (they took the thumb back)."""
        with self._connection:
            cursor = self._connection.execute(
                "DELETE FROM feedback WHERE answer_id = ? AND user = ? "
                "AND EXISTS (SELECT 1 FROM answers WHERE id = ? AND user = ?)",
                (record_id, user, record_id, user),
            )
        return cursor.rowcount > 0

    @_translated
    def purge(self, *, before: str) -> int:
        """Delete the records (and their feedback) older than ``before``; return how many."""
        with self._connection:
            self._connection.execute(
                "DELETE FROM feedback WHERE answer_id IN (SELECT id FROM answers WHERE time < ?)",
                (before,),
            )
            cursor = self._connection.execute("DELETE FROM answers WHERE time < ?", (before,))
        return cursor.rowcount


def _record(row: sqlite3.Row) -> AuditRecord:
    filters: dict[str, Any] = json.loads(row["filters"])
    return AuditRecord(
        record_id=row["id"],
        time=row["time"],
        user=row["user"],
        question=row["question"],
        query=row["query"],
        filters=SearchFilters(
            sources=tuple(filters.get("sources", ())),
            tags=tuple(filters.get("tags", ())),
            date_from=filters.get("date_from", ""),
            date_to=filters.get("date_to", ""),
        ),
        sources=tuple(AuditSource(**s) for s in json.loads(row["sources"])),
        answer=row["answer"],
        mode=row["mode"],
        no_match=bool(row["no_match"]),
        not_covered=bool(row["not_covered"]),
        unsupported=tuple(json.loads(row["unsupported"])),
        timings_ms=tuple(json.loads(row["timings"]).items()),
    )


def _feedback(row: sqlite3.Row) -> Feedback | None:
    if row["rating"] is None:
        return None
    return Feedback(
        record_id=row["id"],
        time=row["f_time"],
        user=row["f_user"],
        rating=row["rating"],
        reason=row["reason"],
        correction=row["correction"],
    )
