"""One writer per index: a lock file next to the index, and a lease on a Chroma server.

Two processes writing one Chroma directory can corrupt it, so every ingest
holds ``INDEX/ingest.lock`` for its whole run. The OS releases the lock when
the process dies, even by SIGKILL, so a crashed ingest never blocks the next.

A lock file cannot stop a second machine writing to the same Chroma server, so
an ingest into a server also holds a lease stored on the server (`writer_lease`):
a record of its holder and an expiry, renewed by a background thread while the
ingest runs and deleted at its end. Another writer refuses to start while a
live lease names someone else; a writer that dies leaves a lease that expires
after ``LEASE_S`` seconds. Clocks are not trusted: a lease that looks expired is
watched for half its period and taken only if no renewal came. Chroma has no
compare-and-swap, so two writers starting in the same instant are told apart by
writing, pausing and reading the lease back: the one whose record survived goes on,
the other refuses.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from assistant.errors import IndexBusyError, StoreError
from assistant.index.chroma import ChromaIndex

__all__ = ["LEASE_S", "writer_lease", "writer_lock"]

LEASE_S = 60.0
# Between writing the lease and reading it back: longer than a write's round trip.
_SETTLE_S = 0.3

logger = logging.getLogger(__name__)


@contextmanager
def writer_lock(index_dir: Path, *, wait: bool) -> Iterator[None]:
    """Hold the index's writer lock for the duration of the block.

    Args:
        index_dir: The index directory (created if missing).
        wait: Block until the lock is free instead of refusing at once.

    Raises:
        IndexBusyError: Another process holds the lock and ``wait`` is false.
        StoreError: The directory cannot be created or written.
    """
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create index directory {index_dir}: {exc.strerror}") from exc
    lock = FileLock(str(index_dir / "ingest.lock"), timeout=-1 if wait else 0)
    try:
        lock.acquire()
    except Timeout as exc:
        raise IndexBusyError(
            f"another ingest is writing to {index_dir}; wait for it to finish "
            "(or pass --wait to queue behind it)"
        ) from exc
    except OSError as exc:
        path = index_dir / "ingest.lock"
        raise StoreError(
            f"cannot lock {path}: {exc.strerror or exc} (the writer lock must be a file: "
            "if no ingest is running, remove it and run the ingest again)"
        ) from exc
    logger.debug("process %d holds the writer lock on %s", os.getpid(), index_dir)
    try:
        yield
    finally:
        lock.release()


Clock = Callable[[], float]


@contextmanager
def writer_lease(
    index: ChromaIndex, *, wait: bool, seconds: float = LEASE_S, clock: Clock = time.time
) -> Iterator[str]:
    """Hold the server's writer lease for the duration of the block; yield the holder name.

    A lease whose expiry has passed by this machine's ``clock`` is taken only after
    watching it for half its period without a renewal: the holder's clock may be
    behind ours (finding D16), and a live holder renews every third of the period.

    Raises:
        IndexBusyError: Another live lease is held and ``wait`` is false.
        StoreError: The server cannot be reached.
    """
    holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    while not _take(index, holder, seconds, clock):
        if not wait:
            current = index.read_lease()
            who = current[0] if current else "another writer"
            raise IndexBusyError(
                f"another ingest ({who}) is writing to {index.location}; wait for it to "
                "finish (or pass --wait to queue behind it)"
            )
        time.sleep(1.0)
    stop = threading.Event()
    renewer = threading.Thread(
        target=_renew, args=(index, holder, seconds, clock, stop), name="lease-renewal", daemon=True
    )
    renewer.start()
    logger.debug("%s holds the writer lease on %s", holder, index.location)
    try:
        yield holder
    finally:
        stop.set()
        renewer.join()
        _release(index, holder)


def _release(index: ChromaIndex, holder: str) -> None:
    """Remove our lease; a failure is a warning, never raised over the block's own error.

    (A server that died mid-ingest used to be reported as a lease error, D26.)
    """
    try:
        current = index.read_lease()
        if current is not None and current[0] == holder:
            index.delete_lease()
    except StoreError as exc:
        logger.warning("could not release the writer lease (it expires by itself): %s", exc)


def _take(index: ChromaIndex, holder: str, seconds: float, clock: Clock) -> bool:
    current = index.read_lease()
    if current is not None and current[0] != holder and _alive(index, current, clock):
        return False
    index.write_lease(holder, clock() + seconds, period=seconds)
    time.sleep(_SETTLE_S)
    current = index.read_lease()
    return current is not None and current[0] == holder


def _alive(index: ChromaIndex, lease: tuple[str, float, float, int], clock: Clock) -> bool:
    """Whether another holder's lease is live: unexpired by our clock, or renewed meanwhile."""
    _, expires, period, _ = lease
    if expires > clock():
        return True
    deadline = time.monotonic() + max(period, _SETTLE_S) / 2
    while time.monotonic() < deadline:
        time.sleep(min(0.5, max(period, _SETTLE_S) / 8))
        now = index.read_lease()
        if now != lease:
            return now is not None
    return False


def _renew(
    index: ChromaIndex, holder: str, seconds: float, clock: Clock, stop: threading.Event
) -> None:
    beat = 0
    while not stop.wait(seconds / 3):
        beat += 1
        try:
            current = index.read_lease()
            if current is not None and current[0] != holder:
                logger.error(
                    "the writer lease on %s was taken by %s; not renewing it",
                    index.location,
                    current[0],
                )
                return
            index.write_lease(holder, clock() + seconds, period=seconds, beat=beat)
        except StoreError as exc:
            logger.warning("cannot renew the writer lease on %s: %s", index.location, exc)
