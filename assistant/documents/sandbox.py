"""Parse untrusted files in a helper process with a time and memory budget.

A format parser given a hostile file (a DOCX that inflates to gigabytes, a PDF of a
million text objects, HTML nested thousands deep) can take minutes and gigabytes,
or raise what no loader expects. `Sandbox` runs each parse in one long-lived helper
process whose address space is capped (``RLIMIT_AS``) and which is killed when a
parse runs past its time; either way the file becomes a `DocumentError` naming the
budget, the helper is replaced, and the caller goes on with the next file.

The helper is a fresh interpreter (``python -c``: no fork of a process holding
threads, and the caller's main script is never run again) that talks over two
pipes. One helper serves every file of a process, so the normal case pays a pipe
round trip per file and each format's library is imported once. What the loaders
log in the helper is logged again here, under the same logger names.
"""

from __future__ import annotations

import importlib
import logging
import os
import resource
import subprocess
import sys
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from assistant.documents.base import Extracted
from assistant.errors import DocumentError

__all__ = [
    "PARSE_MEMORY_BYTES",
    "PARSE_SECONDS",
    "ParseBudget",
    "Sandbox",
    "parse_in_process",
    "serve",
    "shared_sandbox",
]

logger = logging.getLogger(__name__)

PARSE_SECONDS = 45.0
PARSE_MEMORY_BYTES = 1024 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ParseBudget:
    """What one file's parse may use: wall-clock seconds and address space in bytes."""

    seconds: float = PARSE_SECONDS
    memory_bytes: int = PARSE_MEMORY_BYTES

    def describe(self) -> str:
        """Say the budget in words: ``45 s and 1024 MiB``."""
        return f"{self.seconds:g} s and {self.memory_bytes // (1024 * 1024)} MiB"


@dataclass(frozen=True, slots=True)
class _Failed:
    """A parse that failed inside the helper: the reason, and whether to replace it."""

    reason: str
    fatal: bool = False


def parse_in_process(kind: str, data: bytes, *, source: str, fallback: str) -> Extracted:
    """Parse in this process (no budget); a file nested too deeply is a `DocumentError`."""
    module = importlib.import_module(f"assistant.documents.{kind}")
    try:
        extracted: Extracted = module.load(data, source=source, fallback=fallback)
    except RecursionError as exc:
        raise DocumentError(source, "nested too deeply to parse") from exc
    return extracted


def _attempt(kind: str, data: bytes, source: str, fallback: str) -> Extracted | _Failed:
    try:
        return parse_in_process(kind, data, source=source, fallback=fallback)
    except DocumentError as exc:
        return _Failed(exc.reason)
    except MemoryError:
        return _Failed("needs more memory than the parse budget", fatal=True)
    except Exception as exc:  # an untrusted file must not end the run
        return _Failed(f"the {kind} parser failed ({type(exc).__name__}: {exc})")


class _Records(logging.Handler):
    """Keeps the helper's log records of one parse, to be logged again by the caller."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        record.msg, record.args = record.getMessage(), None
        record.exc_info = record.exc_text = None
        self.records.append(record)


def serve(read_fd: int, write_fd: int, memory_bytes: int) -> None:
    """The helper's loop: parse each request, answer ``(result, log records)``."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    kept = _Records()
    logging.getLogger("assistant").addHandler(kept)
    logging.getLogger("assistant").setLevel(logging.INFO)
    requests, replies = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    while True:
        try:
            request = requests.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        kept.records = []
        result = _attempt(*request)
        try:
            replies.send((result, kept.records))
        except MemoryError:
            replies.send((_Failed("needs more memory than the parse budget", fatal=True), []))
        if isinstance(result, _Failed) and result.fatal:
            return


@dataclass(slots=True)
class _Helper:
    process: subprocess.Popen[bytes]
    requests: Connection
    replies: Connection

    def close(self) -> None:
        for conn in (self.requests, self.replies):
            conn.close()


class Sandbox:
    """One helper process that parses files within a `ParseBudget`; thread-safe.

    Use as a context manager, or call `close`; a helper left running ends when this
    process does (its request pipe closes).
    """

    def __init__(self, budget: ParseBudget | None = None) -> None:
        self.budget = budget or ParseBudget()
        self._helper: _Helper | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def parse(self, kind: str, data: bytes, *, source: str, fallback: str) -> Extracted:
        """Parse ``data`` as ``kind`` in the helper.

        Raises:
            DocumentError: The loader refused the file, or it ran past the budget's
                time or memory, or the parser crashed; the message names the budget.
        """
        with self._lock:
            helper = self._start()
            try:
                helper.requests.send((kind, data, source, fallback))
                ready = helper.replies.poll(self.budget.seconds)
                reply = helper.replies.recv() if ready else None
            except (EOFError, OSError):
                reply = (_Failed(self._ended(helper), fatal=True), [])
            if reply is None:
                self._stop()
                raise DocumentError(source, self._over_time())
            result, records = reply
            for record in records:
                logging.getLogger(record.name).handle(record)
            if isinstance(result, _Failed):
                if result.fatal:
                    self._stop()
                raise DocumentError(source, self._explain(result))
            extracted: Extracted = result
            return extracted

    def close(self) -> None:
        """End the helper (it is started again by the next `parse`)."""
        with self._lock:
            helper, self._helper = self._helper, None
            if helper is None:
                return
            try:
                helper.requests.send(None)
                helper.process.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                helper.process.kill()
                helper.process.wait()
            helper.close()

    def _start(self) -> _Helper:
        if self._helper is not None and self._helper.process.poll() is None:
            return self._helper
        self._stop()
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        code = (
            "from assistant.documents.sandbox import serve; "
            f"serve({request_read}, {reply_write}, {self.budget.memory_bytes})"
        )
        package_root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", code],
                pass_fds=(request_read, reply_write),
                stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": path},
            )
        finally:
            os.close(request_read)
            os.close(reply_write)
        requests = Connection(request_write, readable=False)
        replies = Connection(reply_read, writable=False)
        self._helper = _Helper(process, requests, replies)
        return self._helper

    def _stop(self) -> None:
        helper, self._helper = self._helper, None
        if helper is None:
            return
        helper.process.kill()
        helper.process.wait()
        helper.close()

    def _ended(self, helper: _Helper) -> str:
        try:
            code = helper.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        logger.warning("the parse helper ended (exit code %s); starting another", code)
        return "the parser stopped while reading it (out of memory or crashed)"

    def _over_time(self) -> str:
        return (
            f"parsing took longer than {self.budget.seconds:g} s; skipped "
            f"(each file gets {self.budget.describe()})"
        )

    def _explain(self, failed: _Failed) -> str:
        if failed.fatal:
            return f"{failed.reason}; skipped (each file gets {self.budget.describe()})"
        return failed.reason


_SHARED: dict[tuple[int, ParseBudget], Sandbox] = {}
_SHARED_LOCK = threading.Lock()


def shared_sandbox(budget: ParseBudget | None = None) -> Sandbox:
    """Return this process's sandbox for ``budget``, made on first use.

    One helper serves every run of a process (a server or a test session ingesting
    again and again), so each format's library is imported once, not once a run.
    """
    key = (os.getpid(), budget or ParseBudget())
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = Sandbox(key[1])
        return _SHARED[key]
