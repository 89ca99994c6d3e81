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

import bisect
import itertools
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from assistant.config import StoreSettings
from assistant.errors import IndexNotFoundError, StoreError
from assistant.index.chroma import ChromaIndex, forget_cached_clients
from assistant.index.commits import KEEP_RECORDS
from assistant.index.files import read_generation
from assistant.types import Chunk, IndexSnapshot, RowOrigin

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
            raise IndexNotFoundError(_missing(self._settings, index.location))
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
    """Return ``base`` without the ``affected`` rows, plus ``fresh``, ordered as a full load.

    A full load is ordered by (source, ordinal), and chunk IDs name their source
    (`assistant.types.chunk_id`), so only the rows of the touched documents are
    looked at: each is found by bisection and the rows between are kept as
    slices. The work grows with the change, not with the index.
    """
    chunks, vectors = base.chunks, base.vectors
    touched = {_source_of(c) for c in affected} | {c.source for c in fresh.chunks}
    fetched: dict[str, list[int]] = {}
    for i, chunk in enumerate(fresh.chunks):
        fetched.setdefault(chunk.source, []).append(i)
    # Alternating pieces: kept slices of ``base`` and the merged rows of one touched source.
    row_pieces: list[Sequence[Chunk]] = []
    vector_pieces: list[npt.NDArray[np.float32]] = []
    origin: list[npt.NDArray[np.int64]] = []  # base row per row, -1 for a fetched one
    start = 0
    emptied: list[str] = []
    for source in sorted(touched):
        lo = bisect.bisect_left(chunks, source, lo=start, key=_chunk_source)
        hi = bisect.bisect_right(chunks, source, lo=lo, key=_chunk_source)
        row_pieces.append(chunks[start:lo])
        vector_pieces.append(vectors[start:lo])
        origin.append(np.arange(start, lo, dtype=np.int64))
        merged = sorted(
            [(chunks[r].ordinal, r) for r in range(lo, hi) if chunks[r].chunk_id not in affected]
            + [(fresh.chunks[f].ordinal, -1 - f) for f in fetched.get(source, [])]
        )
        if not merged:
            emptied.append(source)
        rows = [r for _, r in merged]
        row_pieces.append([chunks[r] if r >= 0 else fresh.chunks[-1 - r] for r in rows])
        vector_pieces.append(
            np.array(
                [vectors[r] if r >= 0 else fresh.vectors[-1 - r] for r in rows], dtype=np.float32
            ).reshape(-1, vectors.shape[1])
        )
        origin.append(np.array([max(r, -1) for r in rows], dtype=np.int64))
        start = hi
    row_pieces.append(chunks[start:])
    vector_pieces.append(vectors[start:])
    origin.append(np.arange(start, len(chunks), dtype=np.int64))
    docs = {s: m for s, m in base.docs.items() if s not in emptied} | dict(fresh.docs)
    roots = {s: r for s, r in base.roots.items() if s not in emptied} | dict(fresh.roots)
    return IndexSnapshot(
        generation=generation,
        chunks=tuple(itertools.chain.from_iterable(row_pieces)),
        vectors=np.concatenate(vector_pieces),
        docs=docs,
        roots=roots,
        origin=RowOrigin(base.generation, np.concatenate(origin)),
    )


def _source_of(chunk_id: str) -> str:
    """Return the source a chunk ID names (IDs are ``source#ordinal``)."""
    return chunk_id.rpartition("#")[0]


def _chunk_source(chunk: Chunk) -> str:
    return chunk.source


def _missing(settings: StoreSettings, location: str) -> str:
    """Say why there is no index: none yet, or a database lost after an ingest committed."""
    database = settings.path / "chroma" / "chroma.sqlite3"
    if settings.is_remote or read_generation(settings) == "0":
        return f"no index at {location}: run `python ingest.py` first"
    state = "missing" if not database.exists() else "empty or without this collection"
    return (
        f"the index database {database} is {state}, though an ingest committed here "
        "(deleted or truncated?): run `python ingest.py PATH...` again to build it anew, "
        "or restore the folder from a backup"
    )
