"""The index as long-running readers see it: an in-memory snapshot kept current.

A search or chat process holds one `IndexReader`. Each question asks it for
the snapshot; it compares the index's generation (a file read, or one request
to a Chroma server) and reloads only after another process committed an ingest,
so a running process sees new documents without a restart and never serves a
chunk that a finished ingest deleted.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

from assistant.config import StoreSettings
from assistant.errors import IndexNotFoundError, StoreError
from assistant.index.chroma import ChromaIndex, forget_cached_clients
from assistant.types import IndexSnapshot

__all__ = ["IndexReader"]

logger = logging.getLogger(__name__)


class IndexReader:
    """Serves the current `IndexSnapshot`, reloading after another process's ingest.

    Thread-safe: concurrent searches share one snapshot; one thread reloads.
    """

    def __init__(self, settings: StoreSettings, *, embedder_identity: str, dimension: int) -> None:
        self._settings = settings
        self._identity = (embedder_identity, dimension)
        self._lock = threading.Lock()
        self._snapshot: IndexSnapshot | None = None

    def snapshot(self) -> IndexSnapshot:
        """Return the current snapshot (cheap when nothing changed).

        Raises:
            IndexNotFoundError: There is no index yet.
            IndexMismatchError: The index was built with another embedding model.
        """
        current = self._index().generation()
        snapshot = self._snapshot
        if snapshot is not None and snapshot.generation == current:
            return snapshot
        with self._lock:
            if self._snapshot is None or self._snapshot.generation != current:
                self._snapshot = self._reload()
            return self._snapshot

    def _index(self) -> ChromaIndex:
        embedder_identity, dimension = self._identity
        return ChromaIndex(self._settings, embedder_identity=embedder_identity, dimension=dimension)

    def _reload(self) -> IndexSnapshot:
        forget_cached_clients()
        if _read_only(self._settings):
            return self._reload_from_copy()
        index = self._index()
        if not index.exists():
            raise IndexNotFoundError(f"no index at {index.location}: run `python ingest.py` first")
        started = time.perf_counter()
        snapshot = index.load_snapshot()
        logger.info(
            "loaded index generation %s: %d chunks in %.0f ms",
            snapshot.generation,
            len(snapshot.chunks),
            (time.perf_counter() - started) * 1000,
        )
        return snapshot

    def _reload_from_copy(self) -> IndexSnapshot:
        """Load a read-only index from a temporary copy, deleted once it is in memory.

        Chroma writes to its database whenever it opens it, even only to read,
        so an index on a read-only mount (a container image, a shared volume)
        cannot be opened where it is.
        """
        source = self._settings.path
        generation = self._index().generation()
        embedder_identity, dimension = self._identity
        with tempfile.TemporaryDirectory(prefix="policy-index-") as tmp:
            try:
                shutil.copytree(source / "chroma", Path(tmp) / "chroma")
            except OSError as exc:
                raise StoreError(
                    f"the index directory {source} is read-only, and copying it to {tmp} "
                    f"to read it failed: {exc}"
                ) from exc
            copy = ChromaIndex(
                replace(self._settings, path=Path(tmp)),
                embedder_identity=embedder_identity,
                dimension=dimension,
            )
            snapshot = replace(copy.load_snapshot(), generation=generation)
            forget_cached_clients()  # Chroma's cache must not keep the deleted copy
        logger.info("index directory %s is read-only: loaded it from a temporary copy", source)
        return snapshot


def _read_only(settings: StoreSettings) -> bool:
    chroma = settings.path / "chroma"
    return not settings.is_remote and chroma.is_dir() and not os.access(chroma, os.W_OK)
