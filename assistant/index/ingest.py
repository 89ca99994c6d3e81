"""Ingest: from folders of policy documents to an up-to-date index.

One run: discover files, plan (new / changed / unchanged / removed), parse and
chunk what changed, embed in length-sorted batches, mark the index as being
written, write each document's chunks (upsert, then delete its stale IDs),
remove what disappeared, and publish a new generation (marked clean) so
running readers reload. A document is only written
once all of its chunks are embedded, and a failed file leaves its stored
chunks as they were. A file with no text (blank, or only front matter) is
*skipped*, not failed; if an earlier version of it was stored, its chunks are
deleted, since the document no longer says anything.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from assistant.chunking.chunker import chunk_document
from assistant.config import Settings
from assistant.documents.loading import check_file, discover, load_document, read_file
from assistant.errors import DocumentError, EmptyDocumentError
from assistant.index.chroma import ChromaIndex
from assistant.index.codec import encode_chunk
from assistant.index.lock import writer_lease, writer_lock
from assistant.index.plan import Candidate, IngestPlan, doc_key, is_whole, key_of, make_plan
from assistant.protocols import Embedder
from assistant.tokens import Tokenizer, get_tokenizer
from assistant.types import Chunk, Document, Problem, StoredDocument, TokenWindow, chunk_id

__all__ = ["PIPELINE_VERSION", "IngestReport", "Progress", "embedder_window", "ingest"]

logger = logging.getLogger(__name__)

# Bump when chunking changes shape, so every document is re-chunked once;
# tests/test_pipeline_version.py fails when the sample chunks change without a bump.
PIPELINE_VERSION = "6"
_EMBED_GROUP = 512

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class IngestReport:
    """The outcome of one ingest run (or its plan, for a dry run)."""

    added: tuple[str, ...]
    changed: tuple[str, ...]
    unchanged: tuple[str, ...]
    removed: tuple[str, ...]
    problems: tuple[Problem, ...]
    chunks_written: int
    chunks_deleted: int
    chunks_oversize: int
    timings: tuple[tuple[str, float], ...]
    dry_run: bool
    skipped: tuple[Problem, ...] = ()  # files with no text: reported, never a problem


@dataclass(slots=True)
class _Run:
    settings: Settings
    embedder: Embedder
    index: ChromaIndex
    progress: Progress
    problems: list[Problem] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    written: int = 0
    deleted: int = 0
    oversize: int = 0
    # What this run changed, for the change record readers patch their snapshots from.
    documents: dict[str, str] = field(default_factory=dict)
    upserted: list[str] = field(default_factory=list)
    deleted_ids: list[str] = field(default_factory=list)

    def timed(self, stage: str, started: float) -> None:
        self.timings[stage] = self.timings.get(stage, 0.0) + time.perf_counter() - started


def ingest(
    roots: Sequence[Path],
    *,
    settings: Settings,
    embedder: Embedder,
    dry_run: bool = False,
    prune: bool = False,
    strict: bool = False,
    rebuild: bool = False,
    wait: bool = False,
    progress: Progress | None = None,
) -> IngestReport:
    """Bring the index in line with the documents under ``roots``.

    Args:
        roots: Directories (or single files) to ingest.
        settings: All settings; ``settings.store`` says where the index is.
        embedder: The embedding model (its identity is recorded in the index).
        dry_run: Plan and chunk, but write nothing.
        prune: Also remove documents ingested from roots not given now.
        strict: Write nothing if any file has a problem.
        rebuild: Drop the index first (e.g. after changing the embedding model).
        wait: Wait for another ingest on the same index instead of refusing.
        progress: Called as ``progress(stage, done, total)``.

    Returns:
        What was (or, for a dry run, would be) done.

    Raises:
        IndexBusyError: Another ingest holds the index and ``wait`` is false.
        IndexMismatchError: The index was built with another embedding model.
        StoreError: The store failed; documents written before stay valid.
    """
    index = ChromaIndex(
        settings.store, embedder_identity=embedder.identity, dimension=embedder.dimension
    )
    run = _Run(settings, embedder, index, progress or _no_progress)
    resolved = [root.resolve() for root in roots]
    if dry_run:
        return _execute(run, resolved, dry_run=True, prune=prune, strict=strict)
    with writer_lock(settings.store.path, wait=wait), ExitStack() as stack:
        if settings.store.is_remote:
            # The lock file guards one machine; the lease guards the server.
            stack.enter_context(writer_lease(index, wait=wait))
        if rebuild:
            index.drop()
        return _execute(run, resolved, dry_run=False, prune=prune, strict=strict)


def _execute(
    run: _Run, roots: list[Path], *, dry_run: bool, prune: bool, strict: bool
) -> IngestReport:
    started = time.perf_counter()
    stored = run.index.stored_documents() if run.index.exists() else {}
    candidates, problems = _scan(roots, signature=_signature(run))
    plan = make_plan(candidates, stored, roots=roots, prune=prune, problems=problems)
    run.problems.extend(problems)
    run.timed("scan", started)
    if dry_run or strict:
        # A dry run, or strict mode's check before anything is written: parse
        # everything, keep only the counts.
        planned = sum(len(p.chunks) for p in _parse_each(run, plan.to_process))
        if dry_run or run.problems:
            return _report(run, plan, stored, dry_run=True, planned_chunks=planned)
        run.oversize = 0
        run.skipped.clear()  # the write pass below parses (and skips) them again
    if plan.to_process or plan.removed:
        run.index.begin_write()
    elif not run.index.exists():
        run.index.open(create=True)
    elif all(is_whole(doc) for doc in stored.values()):
        # Nothing to write and nothing half-written: let the next run read one row per document.
        run.index.mark_clean()
    stored_ids = {source: doc.chunk_ids for source, doc in stored.items()}
    _write_all(run, _parse_each(run, plan.to_process), stored_ids=stored_ids)
    _remove(run, plan)
    _remove_skipped(run, stored_ids)
    if plan.to_process or plan.removed:
        run.index.commit(documents=run.documents, upserted=run.upserted, deleted=run.deleted_ids)
    else:
        run.index.republish()
    return _report(run, plan, stored, dry_run=False, planned_chunks=0)


def _signature(run: _Run) -> str:
    chunking = run.settings.chunking
    return (
        f"pipeline={PIPELINE_VERSION};tokens={chunking.max_tokens};overlap={chunking.overlap};"
        f"min={chunking.min_tokens};encoding={chunking.encoding};embedder={run.embedder.identity}"
    )


def _scan(roots: Sequence[Path], *, signature: str) -> tuple[list[Candidate], list[Problem]]:
    candidates: list[Candidate] = []
    problems: list[Problem] = []
    owner: dict[str, Path] = {}
    for root, path in discover(roots):
        source = path.relative_to(root).as_posix()
        if source in owner and owner[source] != root:
            problems.append(Problem(source, f"also found under {owner[source]}; skipped {path}"))
            continue
        owner[source] = root
        try:
            key = doc_key(check_file(path, root=root, source=source), signature=signature)
        except DocumentError as exc:
            problems.append(Problem(source, exc.reason))
            continue
        except OSError as exc:
            problems.append(Problem(source, f"cannot read file: {exc.strerror or exc}"))
            continue
        candidates.append(Candidate(root, path, source, key))
    return candidates, problems


@dataclass(frozen=True, slots=True)
class _Parsed:
    candidate: Candidate
    document: Document
    chunks: tuple[Chunk, ...]


def _parse_each(run: _Run, candidates: Sequence[Candidate]) -> Iterator[_Parsed]:
    """Yield each document parsed and chunked, recording the files that fail.

    A generator, so only the documents of one embedding group are in memory.
    """
    tokenizer = get_tokenizer(run.settings.chunking.encoding)
    window = embedder_window(run.embedder)
    for done, candidate in enumerate(candidates, 1):
        started = time.perf_counter()
        logger.debug("parsing %s", candidate.source)
        parsed = _parse_one(run, candidate, tokenizer=tokenizer, window=window)
        run.timed("parse", started)
        run.progress("documents", done, len(candidates))
        if parsed is not None:
            yield parsed


def embedder_window(embedder: Embedder) -> TokenWindow:
    """Return the embedder's own token count and limit, for `chunk_document`.

    The chunker cuts every chunk to what the model reads, so nothing is lost to
    truncation; the chunking layer itself never imports a model.
    """

    def count(text: str) -> int:
        return embedder.count_tokens([text])[0]

    return TokenWindow(count=count, limit=embedder.max_input_tokens)


def _parse_one(
    run: _Run, candidate: Candidate, *, tokenizer: Tokenizer, window: TokenWindow
) -> _Parsed | None:
    path, root, source = candidate.path, candidate.root, candidate.source
    try:
        data = read_file(path, root=root, source=source)
        document = load_document(path, root=root, source=source, data=data)
    except EmptyDocumentError as exc:
        logger.info("skipping %s: %s", candidate.source, exc.reason)
        run.skipped.append(Problem(candidate.source, exc.reason))
        return None
    except DocumentError as exc:
        logger.warning("skipping %s: %s", candidate.source, exc.reason)
        run.problems.append(Problem(candidate.source, exc.reason))
        return None
    # The file is read again long after the scan hashed it (a later embedding group can
    # wait minutes); store the key of the bytes parsed, so an edit in between, even one
    # undone later, makes the next run see a change.
    key = key_of(data, signature=_signature(run))
    if key != candidate.doc_key:
        logger.info("%s changed during the ingest: storing the version parsed", candidate.source)
        candidate = replace(candidate, doc_key=key)
    chunks = chunk_document(
        document, settings=run.settings.chunking, tokenizer=tokenizer, window=window
    )
    if not chunks:
        logger.info("skipping %s: no text to index", candidate.source)
        run.skipped.append(Problem(candidate.source, "no text to index"))
        return None
    return _Parsed(candidate, document, _flag_oversize(run, chunks))


def _flag_oversize(run: _Run, chunks: tuple[Chunk, ...]) -> tuple[Chunk, ...]:
    # The chunker already cuts to the window; this only catches what it cannot
    # (a single character the model counts as more tokens than it reads).
    limit = run.embedder.max_input_tokens
    counts = run.embedder.count_tokens([c.text for c in chunks])
    flagged = []
    for chunk, count in zip(chunks, counts, strict=True):
        if count > limit:
            logger.warning(
                "%s: chunk %d has %d model tokens; the embedder reads only %d",
                chunk.source,
                chunk.ordinal,
                count,
                limit,
            )
            run.oversize += 1
            chunk = replace(chunk, oversize=True)
        flagged.append(chunk)
    return tuple(flagged)


def _groups(parsed: Iterable[_Parsed]) -> Iterator[list[_Parsed]]:
    group: list[_Parsed] = []
    size = 0
    for item in parsed:
        group.append(item)
        size += len(item.chunks)
        if size >= _EMBED_GROUP:
            yield group
            group, size = [], 0
    if group:
        yield group


def _write_all(
    run: _Run, parsed: Iterable[_Parsed], *, stored_ids: dict[str, frozenset[str]]
) -> None:
    indexed_at = dt.datetime.now(dt.UTC).date().isoformat()
    for group in _groups(parsed):
        started = time.perf_counter()
        logger.debug(
            "embedding %d chunks of %d documents", sum(len(p.chunks) for p in group), len(group)
        )
        vectors = run.embedder.embed([c.text for p in group for c in p.chunks])
        run.timed("embed", started)
        offset = 0
        for item in group:
            count = len(item.chunks)
            source = item.candidate.source
            run.documents[source] = "changed" if source in stored_ids else "added"
            _write_document(run, item, vectors[offset : offset + count], indexed_at=indexed_at)
            stale = stored_ids.get(item.candidate.source, frozenset()) - {
                chunk_id(item.candidate.source, i) for i in range(count)
            }
            _delete(run, sorted(stale))
            offset += count


def _write_document(run: _Run, item: _Parsed, vectors: np.ndarray, *, indexed_at: str) -> None:
    started = time.perf_counter()
    records = [
        encode_chunk(
            chunk,
            doc=item.document,
            doc_key=item.candidate.doc_key,
            chunk_count=len(item.chunks),
            indexed_at=indexed_at,
        )
        for chunk in item.chunks
    ]
    run.index.upsert(records, vectors)
    run.upserted.extend(r.chunk_id for r in records)
    logger.debug("wrote %d chunks of %s", len(records), item.candidate.source)
    run.written += len(records)
    run.timed("write", started)


def _delete(run: _Run, ids: Sequence[str]) -> None:
    if not ids:
        return
    started = time.perf_counter()
    logger.debug("deleting %d chunks: %s ... %s", len(ids), ids[0], ids[-1])
    run.index.delete(ids)
    run.deleted += len(ids)
    run.deleted_ids.extend(ids)
    run.timed("prune", started)


def _remove(run: _Run, plan: IngestPlan) -> None:
    for doc in plan.removed:
        logger.info("removing %s (no longer under its root)", doc.source)
        run.documents[doc.source] = "removed"
        _delete(run, sorted(doc.chunk_ids))


def _remove_skipped(run: _Run, stored_ids: dict[str, frozenset[str]]) -> None:
    """Delete what was stored for documents that now hold no text."""
    for skipped in run.skipped:
        if stored_ids.get(skipped.source):
            logger.info("removing the stored chunks of %s (it has no text now)", skipped.source)
            run.documents[skipped.source] = "removed"
            _delete(run, sorted(stored_ids[skipped.source]))


def _report(
    run: _Run,
    plan: IngestPlan,
    stored: Mapping[str, StoredDocument],
    *,
    dry_run: bool,
    planned_chunks: int,
) -> IngestReport:
    if dry_run:
        run.written = planned_chunks
        run.deleted = sum(len(d.chunk_ids) for d in plan.removed) + sum(
            len(stored[s.source].chunk_ids) for s in run.skipped if s.source in stored
        )
    failed = {p.source for p in run.problems} | {s.source for s in run.skipped}
    return IngestReport(
        added=tuple(c.source for c in plan.added if c.source not in failed),
        changed=tuple(c.source for c in plan.changed if c.source not in failed),
        unchanged=tuple(c.source for c in plan.unchanged),
        removed=tuple(d.source for d in plan.removed),
        problems=tuple(run.problems),
        chunks_written=run.written,
        chunks_deleted=run.deleted,
        chunks_oversize=run.oversize,
        timings=tuple(run.timings.items()),
        dry_run=dry_run,
        skipped=tuple(run.skipped),
    )


def _no_progress(stage: str, done: int, total: int) -> None:
    del stage, done, total
