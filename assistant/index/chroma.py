"""The Chroma index: the only module that imports ``chromadb``.

Layout of a local index directory::

    INDEX/chroma/       Chroma's persistent store
    INDEX/generation    changes on every committed ingest (readers poll it; see
                        `assistant.index.files`)
    INDEX/ingest.lock   held by the one writer

With a Chroma server (``StoreSettings.host``) the same collection lives on the
server and the generation is kept in the collection's metadata as well; the
lock file stays in the local index directory.

The collection's metadata also says whether the last writer finished
(``state``: ``writing`` from `ChromaIndex.begin_write` until `ChromaIndex.commit`
sets ``clean``); only a cleanly committed index lets the planner trust one row
per document.

Chroma's embedded client caches an opened collection per process and does not
see another process's later writes (reads can even fail outright). Readers
therefore keep an in-memory `IndexSnapshot` (`assistant.index.reader`) and, when the
generation changes, call `forget_cached_clients` and read the collection afresh.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import chromadb
import httpx
import numpy as np
from chromadb.api.shared_system_client import SharedSystemClient
from chromadb.errors import ChromaError, NotFoundError

from assistant.config import StoreSettings
from assistant.errors import IndexMismatchError, IndexNotFoundError, StoreError
from assistant.index.codec import (
    ADMIN_ONLY,
    ChunkRecord,
    MetadataValue,
    decode_audience,
    decode_chunk,
    decode_doc_meta,
)
from assistant.index.commits import (
    KEEP_RECORDS,
    decode_changes,
    encode_changes,
    read_change_file,
    write_change_file,
)
from assistant.index.files import (
    damage_hint,
    describe_location,
    disk_hint,
    read_generation,
    write_generation,
)
from assistant.types import (
    Chunk,
    DocMeta,
    IndexChanges,
    IndexSnapshot,
    StoredDocument,
    chunk_id,
)

__all__ = ["ChromaIndex", "forget_cached_clients"]

# One stored row as read: its ID, (text, vector) when asked for, and its metadata.
_Row = tuple[str, Any, dict[str, MetadataValue]]

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
_READ_PAGE = 5000
# The collection's "state": "writing" from `begin_write` until `commit` says "clean".
_CLEAN = "clean"
_WRITING = "writing"
_client_lock = threading.RLock()
# Building an HttpClient costs ~75 ms (it checks the tenant and database); a
# reader asks for the generation on every question, so remote clients are
# kept. httpx reconnects by itself after a server restart.
_remote_clients: dict[StoreSettings, Any] = {}
# What a read or write can raise: Chroma's errors, disk errors, the client's
# own argument checks, and httpx's when a server is down or drops the connection.
_FAILURES = (ChromaError, OSError, ValueError, httpx.HTTPError)


def _make_client(settings: StoreSettings) -> Any:
    """Return a client for ``settings``; call with ``_client_lock`` held."""
    cached = _remote_clients.get(settings)
    if cached is not None:
        return cached
    try:
        if not settings.is_remote:
            return chromadb.PersistentClient(path=str(settings.path / "chroma"))
        client = chromadb.HttpClient(
            host=settings.host,
            port=settings.port,
            ssl=settings.ssl,
            headers=dict(settings.headers),
        )
    except _FAILURES as exc:
        raise StoreError(
            f"cannot open the index ({describe_location(settings)}): {exc}"
            f"{disk_hint(settings)}{damage_hint(settings, exc)}"
        ) from exc
    _remote_clients[settings] = client
    return client


class ChromaIndex:
    """Read and write one collection of chunks.

    Args:
        settings: Where the index is.
        embedder_identity: The embedding model the vectors come from.
        dimension: The vectors' length.
    """

    def __init__(self, settings: StoreSettings, *, embedder_identity: str, dimension: int) -> None:
        self.settings = settings
        self.embedder_identity = embedder_identity
        self.dimension = dimension
        self._collection: Any = None
        # The generation a write started from, "" when the store's state before it is
        # unknown (dropped, or the last writer died): readers then cannot patch.
        self._base = ""
        self._dropped = False

    @property
    def location(self) -> str:
        """Return where the index is, for messages."""
        return describe_location(self.settings)

    def _failure(self, verb: str, exc: BaseException) -> StoreError:
        hints = disk_hint(self.settings) + damage_hint(self.settings, exc)
        return StoreError(f"{verb} {self.location} failed: {exc}{hints}")

    def exists(self) -> bool:
        """Return whether the collection exists (never creates anything)."""
        if not self.settings.is_remote and not (self.settings.path / "chroma").is_dir():
            return False
        try:
            self._open(create=False)
        except IndexNotFoundError:
            return False
        return True

    def open(self, *, create: bool) -> None:
        """Open the collection, creating it when asked, and check its model.

        Raises:
            IndexNotFoundError: It does not exist and ``create`` is false.
            IndexMismatchError: It was built with another embedding model.
            StoreError: Chroma failed.
        """
        self._open(create=create)

    def _open(self, *, create: bool) -> Any:
        if self._collection is not None:
            return self._collection
        if create and not self.settings.is_remote:
            self.settings.path.mkdir(parents=True, exist_ok=True)
        with _client_lock:
            client = _make_client(self.settings)
            name = self.settings.collection
            try:
                collection = client.get_collection(name)
            except NotFoundError as exc:
                if not create:
                    raise IndexNotFoundError(
                        f"no index at {self.location}: run `python ingest.py` first"
                    ) from exc
                collection = client.create_collection(
                    name,
                    embedding_function=None,
                    configuration={"hnsw": {"space": "cosine"}},
                    metadata=self._identity_metadata(generation="0", state=_CLEAN),
                )
            except _FAILURES as exc:
                hint = damage_hint(self.settings, exc)
                raise StoreError(f"cannot open {self.location}: {exc}{hint}") from exc
        self._check_identity(collection.metadata or {})
        self._collection = collection
        return collection

    def _identity_metadata(self, *, generation: str, state: str) -> dict[str, MetadataValue]:
        return {
            "embedder": self.embedder_identity,
            "dimension": self.dimension,
            "schema": SCHEMA_VERSION,
            "generation": generation,
            "state": state,
        }

    def _set_metadata(self, *, generation: str, state: str) -> None:
        collection = self._open(create=True)
        try:
            collection.modify(metadata=self._identity_metadata(generation=generation, state=state))
        except _FAILURES as exc:
            raise self._failure("updating", exc) from exc

    def _check_identity(self, metadata: dict[str, Any]) -> None:
        stored = str(metadata.get("embedder", ""))
        dim = int(metadata.get("dimension", 0))
        if stored != self.embedder_identity or dim != self.dimension:
            raise IndexMismatchError(
                f"the index at {self.location} was built with embedding model "
                f"{stored!r} ({dim} dimensions) but {self.embedder_identity!r} "
                f"({self.dimension} dimensions) is configured. Re-index with "
                "`python ingest.py --rebuild PATH...`, or point --index at a new directory."
            )

    def drop(self) -> None:
        """Delete the collection and everything in it (for a rebuild).

        A local store Chroma cannot open or change (a damaged database file) is
        deleted as a whole, so a rebuild recovers from any damage.
        """
        if not self.settings.is_remote and not (self.settings.path / "chroma").is_dir():
            return
        with _client_lock:
            try:
                _make_client(self.settings).delete_collection(self.settings.collection)
            except NotFoundError:
                return
            except (StoreError, *_FAILURES) as exc:
                if self.settings.is_remote:
                    raise self._failure("dropping", exc) from exc
                self._delete_store(exc)
        self._collection = None
        self._base = ""
        self._dropped = True
        logger.info("dropped the index at %s", self.location)

    def _delete_store(self, cause: BaseException) -> None:
        """Remove the local Chroma directory; call with ``_client_lock`` held."""
        store = self.settings.path / "chroma"
        logger.warning("cannot read the index at %s (%s): deleting %s", self.location, cause, store)
        forget_cached_clients()  # the cached client still holds the damaged files
        try:
            shutil.rmtree(store)
        except OSError as exc:
            raise StoreError(f"cannot delete the damaged index {store}: {exc}") from exc

    def stored_documents(self) -> dict[str, StoredDocument]:
        """Return what the index holds, per source.

        When the last writer committed (`begin_write` ... `commit`), every
        document is exactly what a clean ingest leaves, so its first chunk's
        row says everything and only those rows are read (0.06 s instead of
        6.3 s at 35,842 chunks). Otherwise, after a run that died mid-write,
        every row is read so the plan sees the damage and repairs it.
        """
        collection = self._open(create=False)
        if (collection.metadata or {}).get("state") != _CLEAN:
            logger.info("the last ingest did not finish: checking every stored chunk")
            return self._documents_from_every_row()
        stored = {}
        for _, _, metadata in self._pages(include=["metadatas"], where={"ordinal": 0}):
            source = str(metadata["source"])
            count = int(metadata["chunk_count"])
            stored[source] = StoredDocument(
                source,
                str(metadata.get("root", "")),
                frozenset({str(metadata["doc_key"])}),
                frozenset(chunk_id(source, i) for i in range(count)),
                count,
            )
        return stored

    def _documents_from_every_row(self) -> dict[str, StoredDocument]:
        keys: dict[str, set[str]] = {}
        ids: dict[str, set[str]] = {}
        roots: dict[str, str] = {}
        counts: dict[str, int] = {}
        for row_id, _, metadata in self._pages(include=["metadatas"]):
            source = str(metadata["source"])
            keys.setdefault(source, set()).add(str(metadata["doc_key"]))
            ids.setdefault(source, set()).add(row_id)
            roots[source] = str(metadata.get("root", ""))
            counts[source] = int(metadata["chunk_count"])
        return {
            source: StoredDocument(
                source,
                roots[source],
                frozenset(keys[source]),
                frozenset(ids[source]),
                counts[source],
            )
            for source in ids
        }

    def max_batch_size(self) -> int:
        """Return how many rows one write may carry."""
        with _client_lock:
            return int(_make_client(self.settings).get_max_batch_size())

    def upsert(self, records: Sequence[ChunkRecord], vectors: np.ndarray) -> None:
        """Write rows (replacing any with the same IDs) in batches the client accepts."""
        collection = self._open(create=True)
        size = self.max_batch_size()
        for start in range(0, len(records), size):
            batch = records[start : start + size]
            try:
                collection.upsert(
                    ids=[r.chunk_id for r in batch],
                    documents=[r.text for r in batch],
                    metadatas=[r.metadata for r in batch],
                    embeddings=vectors[start : start + size],
                )
            except _FAILURES as exc:
                raise self._failure("writing to", exc) from exc

    def delete(self, chunk_ids: Sequence[str]) -> None:
        """Remove rows by ID (unknown IDs are ignored)."""
        collection = self._open(create=True)
        size = self.max_batch_size()
        for start in range(0, len(chunk_ids), size):
            try:
                collection.delete(ids=list(chunk_ids[start : start + size]))
            except _FAILURES as exc:
                raise self._failure("deleting from", exc) from exc

    def begin_write(self) -> None:
        """Mark the index as being written until `commit`, so a run that dies is noticed."""
        collection = self._open(create=True)
        metadata = collection.metadata or {}
        generation = str(metadata.get("generation", "0"))
        clean = metadata.get("state") == _CLEAN and not self._dropped
        self._base = generation if clean else ""
        self._set_metadata(generation=generation, state=_WRITING)

    def mark_clean(self) -> None:
        """Record that the index is exactly what clean ingests leave (the caller checked)."""
        collection = self._open(create=True)
        metadata = collection.metadata or {}
        if metadata.get("state") != _CLEAN:
            # The run that died may have written rows no generation announced: publish
            # one with no change record, so running readers reload in full.
            self._base = ""
            self.commit()

    def commit(
        self,
        *,
        documents: dict[str, str] | None = None,
        upserted: Sequence[str] = (),
        deleted: Sequence[str] = (),
    ) -> str:
        """Publish a new generation so running readers refresh, mark it clean; return it.

        What the write changed is recorded first (`assistant.index.commits`), so a
        reader that sees the new generation finds its record. Without ``documents``
        the record says nothing is known and readers reload in full.
        """
        generation = f"{time.time_ns():x}-{os.getpid():x}"
        changes = IndexChanges(
            generation=generation,
            previous=self._base if documents is not None else "",
            documents=dict(documents or {}),
            upserted=tuple(upserted),
            deleted=tuple(deleted),
        )
        self._record(changes)
        self._set_metadata(generation=generation, state=_CLEAN)
        if not self.settings.is_remote:
            write_generation(self.settings, generation)
        self._base = generation
        return generation

    def _record(self, changes: IndexChanges) -> None:
        if not self.settings.is_remote:
            try:
                write_change_file(self.settings, changes)
            except OSError as exc:
                raise self._failure("recording the changes of", exc) from exc
            return
        log = self._log()
        try:
            log.upsert(
                ids=[changes.generation],
                documents=[encode_changes(changes)],
                embeddings=[[1.0]],
                metadatas=[{"previous": changes.previous, "at": time.time()}],
            )
            self._prune_log(log)
        except _FAILURES as exc:
            raise self._failure("recording the changes of", exc) from exc

    def _log(self) -> Any:
        """Return the server's side collection of change records (created on first use)."""
        return self._side_collection("log", "opening the change log of")

    def _side_collection(self, suffix: str, action: str) -> Any:
        """Return the collection ``<collection>-<suffix>`` beside this one, created if new."""
        with _client_lock:
            client = _make_client(self.settings)
            try:
                return client.get_or_create_collection(
                    f"{self.settings.collection}-{suffix}", embedding_function=None
                )
            except _FAILURES as exc:
                raise self._failure(action, exc) from exc

    def _prune_log(self, log: Any) -> None:
        rows = log.get(include=["metadatas"])
        if len(rows["ids"]) <= KEEP_RECORDS:
            return
        order = sorted(
            zip(rows["ids"], rows["metadatas"], strict=True),
            key=lambda pair: float(pair[1].get("at", 0.0)),
        )
        log.delete(ids=[row_id for row_id, _ in order[:-KEEP_RECORDS]])

    def change_record(self, generation: str) -> IndexChanges | None:
        """Return what the ingest that committed ``generation`` changed, None if unknown."""
        if not self.settings.is_remote:
            return read_change_file(self.settings, generation)
        try:
            rows = self._log().get(ids=[generation], include=["documents"])
        except (StoreError, *_FAILURES) as exc:
            logger.warning("cannot read the change log of %s: %s", self.location, exc)
            return None
        if not rows["ids"]:
            return None
        changes = decode_changes(str(rows["documents"][0]))
        return changes if changes is not None and changes.generation == generation else None

    def read_lease(self) -> tuple[str, float, float, int] | None:
        """Return the writer lease on the server, if any.

        As ``(holder, expires, period, beat)``: the expiry as a Unix time of the
        holder's clock, how long each renewal lasts, and a count the holder raises
        at each renewal (so a taker can see it is alive whatever the clocks say).
        """
        try:
            rows = self._leases().get(ids=["lease"], include=["metadatas"])
        except _FAILURES as exc:
            raise self._failure("reading the writer lease of", exc) from exc
        if not rows["ids"]:
            return None
        metadata = rows["metadatas"][0] or {}
        return (
            str(metadata.get("holder", "")),
            float(metadata.get("expires", 0.0)),
            float(metadata.get("period", 0.0)),
            int(metadata.get("beat", 0)),
        )

    def write_lease(
        self, holder: str, expires: float, *, period: float = 0.0, beat: int = 0
    ) -> None:
        """Record ``holder`` as the writer until ``expires`` (a Unix time), renewal ``beat``."""
        try:
            self._leases().upsert(
                ids=["lease"],
                embeddings=[[1.0]],
                metadatas=[{"holder": holder, "expires": expires, "period": period, "beat": beat}],
            )
        except _FAILURES as exc:
            raise self._failure("writing the writer lease of", exc) from exc

    def delete_lease(self) -> None:
        """Remove the writer lease."""
        try:
            self._leases().delete(ids=["lease"])
        except _FAILURES as exc:
            raise self._failure("releasing the writer lease of", exc) from exc

    def _leases(self) -> Any:
        return self._side_collection("lease", "opening the writer lease of")

    def committed(self) -> tuple[str, bool]:
        """Return the generation the collection says was committed, and whether it is clean.

        Read afresh from the store, so a reader can check that no write began
        while it was reading rows.
        """
        with _client_lock:
            client = _make_client(self.settings)
            try:
                metadata = client.get_collection(self.settings.collection).metadata or {}
            except NotFoundError as exc:
                raise IndexNotFoundError(f"no index at {self.location}") from exc
            except _FAILURES as exc:
                raise self._failure("reading", exc) from exc
        return str(metadata.get("generation", "0")), metadata.get("state") == _CLEAN

    def republish(self) -> None:
        """Make ``INDEX/generation`` say the committed generation, if it does not.

        A run killed inside `commit` (collection marked clean, file not yet replaced)
        leaves the old token in the file, and running readers, which only read the
        file, would serve the old snapshot until some later ingest changed a document.
        """
        if self.settings.is_remote:
            return
        committed = str((self._open(create=False).metadata or {}).get("generation", "0"))
        if read_generation(self.settings) != committed:
            logger.info("republishing generation %s at %s", committed, self.location)
            write_generation(self.settings, committed)

    def generation(self) -> str:
        """Return the committed generation."""
        if not self.settings.is_remote:
            return read_generation(self.settings)
        with _client_lock:
            client = _make_client(self.settings)
            try:
                metadata = client.get_collection(self.settings.collection).metadata or {}
            except NotFoundError as exc:
                raise IndexNotFoundError(f"no index at {self.location}") from exc
            except _FAILURES as exc:
                # A fresh client next time re-checks the server and says what is wrong.
                _remote_clients.pop(self.settings, None)
                raise StoreError(f"cannot reach {self.location}: {exc}") from exc
        return str(metadata.get("generation", "0"))

    def load_snapshot(self) -> IndexSnapshot:
        """Read every chunk and vector into memory, one version of each document.

        A run killed mid-write can leave a document's new chunks next to stale
        ones of its old version (or part of a removed one); only the rows that
        agree with the document's first chunk are served (`_one_version`).
        """
        generation = self.generation()
        return self._snapshot_of(
            generation,
            self._pages(include=["documents", "metadatas", "embeddings"]),
            one_version=True,
        )

    def load_rows(self, ids: Sequence[str]) -> IndexSnapshot:
        """Read the rows with these IDs (unknown ones are absent) as a partial snapshot."""
        return self._snapshot_of("", self._rows_by_id(ids))

    def _rows_by_id(self, ids: Sequence[str]) -> Iterator[_Row]:
        collection = self._open(create=False)
        wanted = list(ids)
        for start in range(0, len(wanted), _READ_PAGE):
            try:
                page = collection.get(
                    ids=wanted[start : start + _READ_PAGE],
                    include=["documents", "metadatas", "embeddings"],
                )
            except _FAILURES as exc:
                raise self._failure("reading", exc) from exc
            for i, row_id in enumerate(page["ids"]):
                payload = (page["documents"][i], page["embeddings"][i])
                yield row_id, payload, page["metadatas"][i]

    def _snapshot_of(
        self, generation: str, rows: Iterator[_Row], *, one_version: bool = False
    ) -> IndexSnapshot:
        decoded = [
            (decode_chunk(row_id, text, metadata), vector, metadata)
            for row_id, (text, vector), metadata in rows
        ]
        if one_version:
            decoded = _one_version(decoded, location=self.location)
        decoded.sort(key=lambda row: (row[0].source, row[0].ordinal))
        docs: dict[str, DocMeta] = {}
        roots: dict[str, str] = {}
        for chunk, _, metadata in decoded:
            if chunk.source not in docs:
                docs[chunk.source] = decode_doc_meta(metadata)
                roots[chunk.source] = str(metadata.get("root", ""))
            elif decode_audience(metadata) != docs[chunk.source].audience:
                # Chunks of one document that disagree (a half-written document, a
                # damaged row): the whole document is restricted to administrators.
                docs[chunk.source] = replace(docs[chunk.source], audience=ADMIN_ONLY)
        matrix = np.asarray([vector for _, vector, _ in decoded], dtype=np.float32)
        return IndexSnapshot(
            generation=generation,
            chunks=tuple(chunk for chunk, _, _ in decoded),
            vectors=matrix.reshape(-1, self.dimension),
            docs=docs,
            roots=roots,
        )

    def _pages(
        self, *, include: list[str], where: dict[str, MetadataValue] | None = None
    ) -> Iterator[tuple[str, Any, dict[str, MetadataValue]]]:
        collection = self._open(create=False)
        offset = 0
        while True:
            try:
                page = collection.get(include=include, where=where, limit=_READ_PAGE, offset=offset)
            except _FAILURES as exc:
                raise self._failure("reading", exc) from exc
            ids = page["ids"]
            for i, row_id in enumerate(ids):
                metadata = page["metadatas"][i] if page.get("metadatas") is not None else {}
                payload: Any = None
                if "embeddings" in include:
                    payload = (page["documents"][i], page["embeddings"][i])
                yield row_id, payload, metadata
            if len(ids) < _READ_PAGE:
                return
            offset += _READ_PAGE


_Decoded = tuple[Chunk, Any, dict[str, MetadataValue]]


def _one_version(rows: list[_Decoded], *, location: str) -> list[_Decoded]:
    """Return the rows of each document's current version: those its first chunk describes.

    Chunk IDs are ``source#ordinal``, so a new version overwrites the old one's
    first rows and deletes the rest afterwards. A row is served only when its
    ``doc_key`` is that of ordinal 0 and its ordinal is below that row's
    ``chunk_count``; a document without its first chunk was being removed.
    """
    heads = {chunk.source: metadata for chunk, _, metadata in rows if chunk.ordinal == 0}
    kept = [
        row
        for row in rows
        if (head := heads.get(row[0].source)) is not None
        and row[2].get("doc_key") == head.get("doc_key")
        and row[0].ordinal < int(head.get("chunk_count", 0))
    ]
    if len(kept) < len(rows):
        logger.warning(
            "the last ingest of %s did not finish: %d stale chunks are not served; "
            "run ingest.py again to repair the index",
            location,
            len(rows) - len(kept),
        )
    return kept


def forget_cached_clients() -> None:
    """Drop Chroma's per-process client cache, so the next read sees other processes' writes."""
    with _client_lock:
        _remote_clients.clear()
        SharedSystemClient.clear_system_cache()
