"""The index as long-running readers see it: an in-memory snapshot kept current.

A search or chat process holds one `IndexReader`. Each question asks it for
the committed generation (a file read, or one request to a Chroma server). When
another process committed an ingest, the reader reads the change records from
its snapshot's generation to the new one (`assistant.index.commits`) and
fetches only the rows they name (`IndexReader.patch`); with no such records
(a rebuild, a run after a crash, a reader too far behind) it reloads in full.
So a running process sees new documents without a restart and never serves a
chunk that a finished ingest deleted. `assistant.retrieval.freshness` does the
patching off the question path.
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

import numpy as np

from assistant.config import StoreSettings
from assistant.errors import IndexNotFoundError, StoreError
from assistant.index.chroma import ChromaIndex, forget_cached_clients
from assistant.index.commits import KEEP_RECORDS
from assistant.types import IndexSnapshot

__all__ = ["IndexReader"]

logger = logging.getLogger(__name__)


class IndexReader:
    """Serves the current `IndexSnapshot`, reloading after another process's ingest.

    Thread-safe: concurrent searches share one snapshot; one thread reloads.
    """

    def __init__(
        self,
        settings: StoreSettings,
        *,
        embedder_identity: str,
        dimension: int,
        incremental: bool = True,
    ) -> None:
        self._settings = settings
        self._incremental = incremental  # False: reload in full on every new generation
        self._identity = (embedder_identity, dimension)
        self._lock = threading.Lock()
        self._snapshot: IndexSnapshot | None = None

    def snapshot(self) -> IndexSnapshot:
        """Return the current snapshot (cheap when nothing changed).

        Raises:
            IndexNotFoundError: There is no index yet.
            IndexMismatchError: The index was built with another embedding model.
        """
        current = self.generation()
        snapshot = self._snapshot
        if snapshot is not None and snapshot.generation == current:
            return snapshot
        with self._lock:
            if self._snapshot is None:
                self._snapshot = self.load()
            elif self._snapshot.generation != current:
                self._snapshot = self.patch(self._snapshot, current) or self.load()
            return self._snapshot

    def generation(self) -> str:
        """Return the committed generation (cheap: a file read or one request)."""
        return self._index().generation()

    def changes(self, since: str, until: str) -> frozenset[str] | None:
        """Return the chunk IDs written or deleted from generation ``since`` to ``until``.

        Follows the change records back from ``until``; None when a record is
        missing, does not know its predecessor, or the chain is longer than the
        records kept (the caller then reloads in full).
        """
        index = self._index()
        affected: set[str] = set()
        generation = until
        for _ in range(KEEP_RECORDS):
            if generation == since:
                return frozenset(affected)
            record = index.change_record(generation)
            if record is None or not record.previous:
                return None
            affected |= record.affected
            generation = record.previous
        return frozenset(affected) if generation == since else None

    def load(self) -> IndexSnapshot:
        """Read the whole collection (what `snapshot` does when it cannot patch)."""
        return self._reload()

    def patch(self, base: IndexSnapshot, generation: str) -> IndexSnapshot | None:
        """Return ``base`` brought to ``generation`` by fetching only the changed rows.

        The result holds exactly what a full load would (rows in the same order).
        None when the changes are unknown, or a write began while the rows were
        read (the caller reloads in full, or tries again).
        """
        started = time.perf_counter()
        if not self._incremental:
            return None
        affected = self.changes(base.generation, generation)
        if affected is None or _read_only(self._settings):
            return None
        if not self._settings.is_remote:
            forget_cached_clients()  # the embedded client does not see other processes' writes
        index = self._index()
        fresh = index.load_rows(sorted(affected))
        committed, clean = index.committed()
        if committed != generation or not clean:
            logger.info("the index changed while patching to %s: not patching", generation)
            return None
        snapshot = _merge(base, fresh, affected, generation=generation)
        logger.info(
            "patched index generation %s to %s: %d rows changed, %d chunks in %.0f ms",
            base.generation,
            generation,
            len(affected),
            len(snapshot.chunks),
            (time.perf_counter() - started) * 1000,
        )
        return snapshot

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


def _merge(
    base: IndexSnapshot, fresh: IndexSnapshot, affected: frozenset[str], *, generation: str
) -> IndexSnapshot:
    """Return ``base`` without the ``affected`` rows, plus ``fresh``, ordered as a full load."""
    keep = [i for i, chunk in enumerate(base.chunks) if chunk.chunk_id not in affected]
    chunks = [base.chunks[i] for i in keep] + list(fresh.chunks)
    order = sorted(range(len(chunks)), key=lambda i: (chunks[i].source, chunks[i].ordinal))
    vectors = np.concatenate(
        (base.vectors[np.asarray(keep, dtype=np.int64)], fresh.vectors.astype(np.float32))
    )
    if order != list(range(len(order))):
        vectors = vectors[np.asarray(order, dtype=np.int64)]
    sources = {chunk.source for chunk in chunks}
    docs = {s: m for s, m in base.docs.items() if s in sources} | dict(fresh.docs)
    roots = {s: r for s, r in base.roots.items() if s in sources} | dict(fresh.roots)
    return IndexSnapshot(
        generation=generation,
        chunks=tuple(chunks[i] for i in order),
        vectors=vectors,
        docs=docs,
        roots=roots,
    )
