"""One writer per index: a lock file next to the index.

Two processes writing one Chroma directory can corrupt it, so every ingest
holds ``INDEX/ingest.lock`` for its whole run. The OS releases the lock when
the process dies, even by SIGKILL, so a crashed ingest never blocks the next.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from assistant.errors import IndexBusyError, StoreError

__all__ = ["writer_lock"]

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
        raise StoreError(f"cannot lock {index_dir}: {exc.strerror or exc}") from exc
    logger.debug("process %d holds the writer lock on %s", os.getpid(), index_dir)
    try:
        yield
    finally:
        lock.release()
