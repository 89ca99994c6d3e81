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
import numpy.typing as npt

from assistant.chunking.chunker import chunk_document
from assistant.config import Settings
from assistant.documents.access import (
    AccessRuleError,
    AccessRules,
    read_rules,
    unapplied_access_file,
)
from assistant.documents.loading import check_file, discover, load_document, read_file
from assistant.documents.origin import Origin, read_origins, with_origin
from assistant.documents.sandbox import ParseBudget, Sandbox, shared_sandbox
from assistant.errors import DocumentError, EmptyDocumentError
from assistant.index.changes import (
    SectionState,
    post_changes,
    record_changes,
    recover_pending,
    section_state,
    write_pending,
)
from assistant.index.chroma import ChromaIndex
from assistant.index.codec import encode_chunk
from assistant.index.lock import writer_lease, writer_lock
from assistant.index.plan import Candidate, IngestPlan, doc_key, is_whole, key_of, make_plan
from assistant.protocols import Embedder
from assistant.tokens import Tokenizer, get_tokenizer
from assistant.types import (
    Chunk,
    Document,
    DocumentChange,
    Problem,
    StoredDocument,
    TokenWindow,
    chunk_id,
)

__all__ = ["PIPELINE_VERSION", "IngestReport", "Progress", "embedder_window", "ingest"]

logger = logging.getLogger(__name__)

# Bump when chunking changes shape, so every document is re-chunked once;
# tests/chunking/test_pipeline_version.py fails when the sample chunks change without a bump.
PIPELINE_VERSION = "8"
_EMBED_GROUP = 512
# Chunks per embedding call inside a group, so progress moves every few seconds; a multiple
# of the local model's batch (32) over length-sorted texts, so its batches stay the same.
_EMBED_SLICE = 64

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
    changes: tuple[DocumentChange, ...] = ()  # by section, see `assistant.index.changes`


@dataclass(slots=True)
class _Run:
    settings: Settings
    embedder: Embedder
    index: ChromaIndex
    progress: Progress
    sandbox: Sandbox = field(default_factory=shared_sandbox)
    problems: list[Problem] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    written: int = 0
    deleted: int = 0
    oversize: int = 0
    sections: dict[str, SectionState] = field(default_factory=dict)
    changes: tuple[DocumentChange, ...] = ()
    recovered: tuple[DocumentChange, ...] = ()
    embedded: int = 0
    estimate: _ChunkEstimate = field(default_factory=lambda: _ChunkEstimate(0))
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
    budget: ParseBudget | None = None,
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
        progress: Called as ``progress(stage, done, total)``: stage ``documents``
            as each file is parsed, and (when writing) ``chunks`` as chunks are
            embedded and written, its total an estimate from the bytes parsed so far
            until the last document is parsed.
        budget: The time and memory each file's parse may use (in a helper
            process); a file over it is a problem, and the run goes on.

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
    run = _Run(settings, embedder, index, progress or _no_progress, sandbox=shared_sandbox(budget))
    resolved = [root.resolve() for root in roots]
    if dry_run:
        return _execute(run, resolved, dry_run=True, prune=prune, strict=strict)
    with writer_lock(settings.store.path, wait=wait), ExitStack() as stack:
        if settings.store.is_remote:
            # The lock file guards one machine; the lease guards the server.
            stack.enter_context(writer_lease(index, wait=wait))
        if rebuild:
            index.drop()
        report = _execute(run, resolved, dry_run=False, prune=prune, strict=strict)
    _notify(settings.audit.webhook, report.changes)
    return report


def _notify(url: str, changes: Sequence[DocumentChange]) -> None:
    """POST the change list to the configured webhook; a failure is only a warning."""
    if not url or not changes:
        return
    error = post_changes(url, changes)
    if error:
        logger.warning("%s (the ingest itself succeeded)", error)


def _execute(
    run: _Run, roots: list[Path], *, dry_run: bool, prune: bool, strict: bool
) -> IngestReport:
    started = time.perf_counter()
    stored = run.index.stored_documents() if run.index.exists() else {}
    candidates, problems = _scan(roots, run=run)
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
    if _keeps_changes(run):  # what a run killed after its commit did not list
        run.recovered = tuple(recover_pending(run.settings.store.path))
    if plan.to_process or plan.removed:
        run.index.begin_write()
    elif not run.index.exists():
        run.index.open(create=True)
    elif all(is_whole(doc) for doc in stored.values()):
        # Nothing to write and nothing half-written: let the next run read one row per document.
        run.index.mark_clean()
    stored_ids = {source: doc.chunk_ids for source, doc in stored.items()}
    _write_all(run, _parse_each(run, plan.to_process, writing=True), stored_ids=stored_ids)
    _remove(run, plan)
    _remove_skipped(run, stored_ids)
    if plan.to_process or plan.removed:
        _note_pending(run, plan, stored_ids)
        run.index.commit(documents=run.documents, upserted=run.upserted, deleted=run.deleted_ids)
    else:
        run.index.republish()
    _record_changes(run, plan, stored_ids)
    return _report(run, plan, stored, dry_run=False, planned_chunks=0)


def _keeps_changes(run: _Run) -> bool:
    # A Chroma server and no local index directory: there is no change list to keep.
    return not (run.settings.store.is_remote and not run.settings.store.path.is_dir())


def _removed(run: _Run, plan: IngestPlan, stored_ids: dict[str, frozenset[str]]) -> list[str]:
    removed = [d.source for d in plan.removed]
    return removed + [s.source for s in run.skipped if stored_ids.get(s.source)]


def _note_pending(run: _Run, plan: IngestPlan, stored_ids: dict[str, frozenset[str]]) -> None:
    """Before the commit, note what it lists: a kill after it loses nothing (D11)."""
    if _keeps_changes(run):
        write_pending(
            run.settings.store.path,
            run.sections,
            added=[c.source for c in plan.added],
            removed=_removed(run, plan, stored_ids),
            time=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        )


def _record_changes(run: _Run, plan: IngestPlan, stored_ids: dict[str, frozenset[str]]) -> None:
    if not _keeps_changes(run):
        return
    listed = record_changes(
        run.settings.store.path,
        run.sections,
        added=[c.source for c in plan.added],
        removed=_removed(run, plan, stored_ids),
        time=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )
    run.changes = (*run.recovered, *listed)


def _signature(
    run: _Run, rule_audience: tuple[str, ...] | None = None, origin: Origin | None = None
) -> str:
    chunking = run.settings.chunking
    signature = (
        f"pipeline={PIPELINE_VERSION};tokens={chunking.max_tokens};overlap={chunking.overlap};"
        f"min={chunking.min_tokens};encoding={chunking.encoding};embedder={run.embedder.identity}"
    )
    if chunking.fill:  # left out when off, so indexes written before the option keep their keys
        signature += ";fill=1"
    # The audience from outside the file is part of the key, so changing only it
    # re-ingests the document; front matter audiences are in the bytes already. Both
    # parts are left out when unset, so indexes written before audiences keep their keys.
    if rule_audience is not None:
        signature += ";audience=" + ",".join(rule_audience)
    default = run.settings.store.default_audience
    if default:
        signature += ";default-audience=" + ",".join(default)
    if origin is not None:
        signature += ";origin=" + origin.signature()
    return signature


def _rules_of(roots: Sequence[Path]) -> dict[Path, AccessRules | AccessRuleError]:
    rules: dict[Path, AccessRules | AccessRuleError] = {}
    for given in roots:
        # Keyed by the folder `discover` names as the root (a single file's folder).
        root = given if given.is_dir() else given.parent
        try:
            rules[root] = read_rules(given)
        except AccessRuleError as exc:
            logger.error("%s", exc)
            rules[root] = exc
    return rules


def _origins_of(
    roots: Sequence[Path], rules: dict[Path, AccessRules | AccessRuleError]
) -> dict[Path, dict[str, Origin]]:
    """Read each root's sources file; one that fails governs its root as a bad rule would."""
    origins: dict[Path, dict[str, Origin]] = {}
    for given in roots:
        root = given if given.is_dir() else given.parent
        try:
            origins[root] = read_origins(given)
        except AccessRuleError as exc:
            logger.error("%s", exc)
            rules[root] = exc
    return origins


def _scan(roots: Sequence[Path], *, run: _Run) -> tuple[list[Candidate], list[Problem]]:
    candidates: list[Candidate] = []
    problems: list[Problem] = []
    owner: dict[str, Path] = {}
    rules = _rules_of(roots)
    origins = _origins_of(roots, rules)
    singles = {root for root in roots if root.is_file()}
    for root, path in discover(roots):
        source = path.relative_to(root).as_posix()
        if source in owner and owner[source] != root:
            problems.append(Problem(source, f"also found under {owner[source]}; skipped {path}"))
            continue
        owner[source] = root
        governing = rules.get(root, AccessRules())
        if isinstance(governing, AccessRuleError):
            # Fail closed: without its audience a document is not written at all.
            problems.append(Problem(source, f"access rules {governing}; not ingested"))
            continue
        ignored = unapplied_access_file(root, path, single=path in singles)
        if ignored is not None:
            problems.append(Problem(source, _UNAPPLIED.format(file=ignored)))
            continue
        audience = governing.audience_of(source)
        origin = origins.get(root, {}).get(source)
        try:
            key = doc_key(
                check_file(path, root=root, source=source),
                signature=_signature(run, audience, origin),
            )
        except DocumentError as exc:
            problems.append(Problem(source, exc.reason))
            continue
        except OSError as exc:
            problems.append(Problem(source, f"cannot read file: {exc.strerror or exc}"))
            continue
        candidates.append(Candidate(root, path, source, key, audience, origin))
    _warn_unused(rules, candidates)
    return candidates, problems


_UNAPPLIED = (
    "access rules {file} are not applied to this document (only the .access file of the "
    "folder given to the ingest is read); not ingested: move the rules there, or ingest "
    "that folder"
)


def _warn_unused(
    rules: Mapping[Path, AccessRules | AccessRuleError], candidates: Sequence[Candidate]
) -> None:
    for root, governing in rules.items():
        if isinstance(governing, AccessRules):
            sources = [c.source for c in candidates if c.root == root]
            for message in governing.unused(sources):
                logger.warning("%s (it protects nothing)", message)


@dataclass(frozen=True, slots=True)
class _Parsed:
    candidate: Candidate
    document: Document
    chunks: tuple[Chunk, ...]


@dataclass(slots=True)
class _ChunkEstimate:
    """How many chunks the run will embed, from the chunks per byte parsed so far.

    Documents are parsed one embedding group ahead of the writes, so the total is
    only known at the end; a byte-weighted guess gives the bar an ETA before then.
    """

    total_bytes: int
    parsed_bytes: int = 0
    parsed_chunks: int = 0
    finished: bool = False

    def add(self, size: int, chunks: int) -> None:
        self.parsed_bytes += size
        self.parsed_chunks += chunks

    @property
    def total(self) -> int:
        if self.finished or not self.parsed_bytes:
            return self.parsed_chunks
        rest = max(self.total_bytes - self.parsed_bytes, 0)
        return self.parsed_chunks + round(rest * self.parsed_chunks / self.parsed_bytes)


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _parse_each(
    run: _Run, candidates: Sequence[Candidate], *, writing: bool = False
) -> Iterator[_Parsed]:
    """Yield each document parsed and chunked, recording the files that fail.

    A generator, so only the documents of one embedding group are in memory.
    ``writing`` also reports the ``chunks`` progress (with its new estimate).
    """
    tokenizer = get_tokenizer(run.settings.chunking.encoding)
    window = embedder_window(run.embedder)
    sizes = [_file_size(c.path) for c in candidates]
    run.estimate = _ChunkEstimate(sum(sizes))
    for done, (candidate, size) in enumerate(zip(candidates, sizes, strict=True), 1):
        started = time.perf_counter()
        logger.debug("parsing %s", candidate.source)
        parsed = _parse_one(run, candidate, tokenizer=tokenizer, window=window)
        run.timed("parse", started)
        run.estimate.add(size, len(parsed.chunks) if parsed is not None else 0)
        run.estimate.finished = done == len(candidates)
        run.progress("documents", done, len(candidates))
        if writing:
            run.progress("chunks", run.embedded, run.estimate.total)
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
        document = load_document(path, root=root, source=source, data=data, sandbox=run.sandbox)
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
    key = key_of(data, signature=_signature(run, candidate.rule_audience, candidate.origin))
    if key != candidate.doc_key:
        logger.info("%s changed during the ingest: storing the version parsed", candidate.source)
        candidate = replace(candidate, doc_key=key)
    document = with_origin(document, candidate.origin, stem=path.stem)
    document = _with_audience(document, candidate, default=run.settings.store.default_audience)
    chunks = chunk_document(
        document, settings=run.settings.chunking, tokenizer=tokenizer, window=window
    )
    if not chunks:
        logger.info("skipping %s: no text to index", candidate.source)
        run.skipped.append(Problem(candidate.source, "no text to index"))
        return None
    return _Parsed(candidate, document, _flag_oversize(run, chunks))


def _with_audience(
    document: Document, candidate: Candidate, *, default: tuple[str, ...]
) -> Document:
    """Resolve the audience: front matter, else the access file's rule, else the default."""
    audience = document.meta.audience
    if audience is None:
        audience = candidate.rule_audience if candidate.rule_audience is not None else default
    return replace(document, meta=replace(document.meta, audience=audience))


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
        vectors = _embed_group(run, [c for p in group for c in p.chunks])
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


def _embed_group(run: _Run, chunks: Sequence[Chunk]) -> npt.NDArray[np.float32]:
    """Embed ``chunks`` in slices of similar length, reporting progress after each.

    Sorted by the model's own (truncated) length as the local embedder sorts, so every
    batch it runs holds the same texts as when the group went in one call.
    """
    texts = [c.text for c in chunks]
    if len(texts) <= _EMBED_SLICE:
        vectors = run.embedder.embed(texts)
        run.embedded += len(texts)
        run.progress("chunks", run.embedded, run.estimate.total)
        return vectors
    limit = run.embedder.max_input_tokens
    lengths = [min(n, limit) for n in run.embedder.count_tokens(texts)]
    order = sorted(range(len(texts)), key=lengths.__getitem__)
    vectors = np.zeros((len(texts), run.embedder.dimension), dtype=np.float32)
    for start in range(0, len(order), _EMBED_SLICE):
        rows = order[start : start + _EMBED_SLICE]
        vectors[rows] = run.embedder.embed([texts[i] for i in rows])
        run.embedded += len(rows)
        run.progress("chunks", run.embedded, run.estimate.total)
    return vectors


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
    run.sections[item.candidate.source] = section_state(item.document)
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
        changes=run.changes,
    )


def _no_progress(stage: str, done: int, total: int) -> None:
    del stage, done, total
