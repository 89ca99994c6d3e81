"""The audit log the chat writes to: a queue and one background writer thread.

`AuditLog.record` and `AuditLog.feedback` only put an item on a bounded queue,
so an answer never waits for the disk. The writer thread owns the one database
connection; a locked database, a full disk or a read-only directory costs the
item and a logged warning (at most one a minute), never a chat. In
``anonymised`` mode the user's name is replaced by an HMAC-SHA256 under a key
kept beside the database (``DB.key``, created on first use, readable by its
owner only), so one user's questions still group together.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import hmac
import logging
import os
import queue
import secrets
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from assistant.audit.store import BUSY_TIMEOUT_S, AuditStore, AuditWriter
from assistant.config import Settings
from assistant.errors import StoreError
from assistant.types import AuditRecord, Feedback

__all__ = ["AuditLog", "open_audit_log", "utc_now"]

logger = logging.getLogger(__name__)

MAX_PENDING = 10_000
_WARN_EVERY_S = 60.0
_PURGE_EVERY_S = 24 * 3600.0
_STOP = object()
_PURGE = object()


@dataclass(frozen=True, slots=True)
class _Withdrawn:
    record_id: str
    user: str


def utc_now() -> str:
    """Return the current UTC time as the log stores it (ISO 8601, seconds)."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def open_audit_log(settings: Settings) -> AuditLog | None:
    """Return the configured audit log, started, or None in ``off`` mode."""
    audit = settings.audit
    if audit.mode == "off":
        return None
    return AuditLog(
        audit.audit_path(settings.store.path),
        anonymised=audit.mode == "anonymised",
        retention_days=audit.retention_days,
    )


def _read_or_create_key(path: Path) -> bytes:
    """Return the HMAC key at ``path``, creating it (owner-only) if there is none.

    The key is written to a private file first and linked into place, so a second
    process never reads a half-written key: it finds either none or the whole one.
    """
    try:
        return _trusted_key(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(secrets.token_hex(32))
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another process won the race: use its key
    finally:
        tmp.unlink()
    return _trusted_key(path)


def _trusted_key(path: Path) -> bytes:
    """Read the key at ``path`` if only this process's user can have written or read it.

    Raises:
        FileNotFoundError: There is no key yet.
        PermissionError: The key belongs to another user or others may read it, so
            someone else may know it and reverse every pseudonym (never used).
        OSError: It cannot be read.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if info.st_uid != os.geteuid() or info.st_mode & 0o077:
            raise PermissionError(
                f"{path} is owned by uid {info.st_uid} with mode {info.st_mode & 0o777:o}; "
                "a key that others may know is never used: delete it (a new one is made) "
                "or make it yours with mode 600"
            )
        data = handle.read(256)
    try:
        return bytes.fromhex(data.decode("ascii").strip())
    except ValueError as exc:
        raise PermissionError(f"{path} is not a key written by this program") from exc


def _cutoff(newest: str, *, days: int) -> str:
    """Return the time before which records are deleted.

    That is ``days`` before now, or before the newest record when the clock is ahead
    of it: a clock jumped forward must not purge the whole history.
    """
    now = dt.datetime.now(dt.UTC)
    cutoff = now - dt.timedelta(days=days)
    try:
        last = dt.datetime.fromisoformat(newest) if newest else now
    except ValueError:
        last = now
    if last.tzinfo is None:
        last = last.replace(tzinfo=dt.UTC)
    if now - last > dt.timedelta(days=1):
        logger.warning(
            "the clock (%s) is %d days ahead of the newest audit record (%s): retention "
            "counts from that record",
            now.isoformat(timespec="seconds"),
            (now - last).days,
            newest,
        )
    return min(cutoff, last - dt.timedelta(days=days)).isoformat(timespec="seconds")


class AuditLog:
    """Writes records and feedback to the audit database in the background.

    Args:
        path: The SQLite file (created with its directory).
        anonymised: Store a keyed hash of each user name instead of the name.
        retention_days: Delete records older than this (0 keeps everything).
        busy_timeout: Seconds a write waits for another writer's lock before it is dropped.
    """

    def __init__(
        self,
        path: Path,
        *,
        anonymised: bool = False,
        retention_days: int = 0,
        busy_timeout: float = BUSY_TIMEOUT_S,
    ) -> None:
        self.path = path
        self.store = AuditStore(path, timeout=busy_timeout)
        self._anonymised = anonymised
        self._retention_days = retention_days
        self._key: bytes | None = None
        self._key_lock = threading.Lock()
        self._queue: queue.Queue[object] = queue.Queue(MAX_PENDING)
        self._last_warning = -_WARN_EVERY_S
        self._thread = threading.Thread(target=self._run, name="audit-writer", daemon=True)
        self._last_purge = -_PURGE_EVERY_S
        # Retention is applied first (a queued task, so `flush` waits for it), then daily.
        self._queue.put_nowait(_PURGE)
        self._thread.start()

    def record(self, record: AuditRecord) -> None:
        """Queue ``record`` for writing; never blocks, never raises."""
        self._put(replace(record, user=self._user(record.user)))

    def feedback(self, feedback: Feedback) -> None:
        """Queue ``feedback`` for writing; never blocks, never raises."""
        self._put(replace(feedback, user=self._user(feedback.user)))

    def withdraw(self, record_id: str, *, user: str) -> None:
        """Queue forgetting ``user``'s feedback on ``record_id``; never blocks, never raises."""
        self._put(_Withdrawn(record_id, self._user(user)))

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything queued so far is written (or dropped); return whether it was."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self._queue.unfinished_tasks

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued (waiting at most ``timeout`` s), then stop the writer thread."""
        flushed = self.flush(timeout)
        if not flushed:
            # Not throttled: this is the last word on what the log lost.
            logger.warning(
                "the audit log at %s is locked or slow: %d writes left unwritten after %.0f s",
                self.path,
                self._queue.unfinished_tasks,
                timeout,
            )
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(_STOP)
        # A writer stuck on a lock is not waited for twice (it is a daemon thread).
        self._thread.join(timeout if flushed else 0)

    def _put(self, item: object) -> None:
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self._warn("the audit log is %d writes behind: dropping one", MAX_PENDING)

    def _user(self, name: str) -> str:
        if not self._anonymised:
            return name
        try:
            key = self._key or self._load_key()
        except OSError as exc:
            # Never store the plain name in anonymised mode.
            self._warn("cannot read the audit key beside %s (%s)", self.path, exc)
            return "unknown"
        digest = hmac.new(key, name.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return "user-" + digest.hexdigest()[:24]

    def _load_key(self) -> bytes:
        with self._key_lock:
            if self._key is None:
                self._key = _read_or_create_key(self.path.with_name(self.path.name + ".key"))
            return self._key

    def _run(self) -> None:
        pending: list[object] = []  # an item taken, not yet written: the file moved
        while True:
            try:
                with self.store.writer() as writer:
                    if self._serve(writer, pending):
                        return
            except StoreError as exc:
                if pending:  # the file moved and cannot be made again: that item is lost
                    pending.clear()
                    self._queue.task_done()
                    self._warn("audit log unavailable, a record is lost: %s", exc)
                elif self._drop_one(exc):
                    return

    def _serve(self, writer: AuditWriter, pending: list[object]) -> bool:
        """Write queued items until stopped (True) or the file moved (False)."""
        while True:
            item = pending.pop() if pending else self._queue.get()
            if item is not _STOP and writer.moved():
                # Not throttled: records would go to a file nobody can read again.
                logger.warning("the audit log %s was deleted or replaced; reopening it", self.path)
                pending.append(item)
                return False
            try:
                if item is _STOP:
                    return True
                self._write(writer, item)
            finally:
                self._queue.task_done()

    def _drop_one(self, exc: StoreError) -> bool:
        """The database cannot be opened: drop the next item (try again for the one after).

        Returns whether that item was the request to stop.
        """
        if self._queue.qsize():
            self._warn("audit log unavailable, a record is lost: %s", exc)
        else:
            self._warn("audit log unavailable: %s", exc)
        item = self._queue.get()
        self._queue.task_done()
        return item is _STOP

    def _write(self, writer: AuditWriter, item: object) -> None:
        if item is _PURGE or time.monotonic() - self._last_purge >= _PURGE_EVERY_S:
            self._last_purge = time.monotonic()
            self._purge(writer)
        try:
            if isinstance(item, AuditRecord):
                writer.add_record(item)
            elif isinstance(item, Feedback) and not writer.add_feedback(item):
                logger.warning(
                    "feedback on %s ignored: no answer of that user has that id", item.record_id
                )
            elif isinstance(item, _Withdrawn):
                writer.remove_feedback(item.record_id, item.user)
        except StoreError as exc:
            self._warn("%s; the record is lost, the chat goes on", exc)

    def _purge(self, writer: AuditWriter) -> None:
        if not self._retention_days:
            return
        try:
            cutoff = _cutoff(writer.newest(), days=self._retention_days)
            deleted = writer.purge(before=cutoff)
        except StoreError as exc:
            self._warn("cannot apply the audit retention: %s", exc)
            return
        if deleted:
            logger.info(
                "deleted %d audit records older than %d days", deleted, self._retention_days
            )

    def _warn(self, message: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._last_warning >= _WARN_EVERY_S:
            self._last_warning = now
            logger.warning(message, *args)
