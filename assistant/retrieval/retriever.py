"""Hybrid search over an in-memory index snapshot: dense cosine + BM25, fused by weighted sum.

Per search: take the current `IndexSnapshot` (rebuilding the BM25 index, filter
columns and section map when its generation changed), then run the steps of
`Retriever.search` in order on one `_Run`: restrict rows with the filters as boolean
masks, score the eligible rows densely (one matrix-vector product) and lexically
(BM25 over chunk texts plus a weighted title field, and the share of the
question's terms each row holds), fuse the two top-50 lists,
demote chunks that overlap a better one of their section and superseded documents,
drop chunks that mostly repeat a better one, expand the top ``k`` into their
sections (small to big), and judge "no good match". A new stage (a reranker, an
access filter) is one more step method in that list. See `assistant.retrieval.fusion`
for the fusion and for how ``Hit.score`` is defined.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from assistant.config import RetrievalSettings
from assistant.errors import IndexMismatchError
from assistant.index.reader import IndexReader
from assistant.protocols import Embedder
from assistant.retrieval.expansion import (
    SectionKey,
    collapse_near_duplicates,
    demote_neighbours,
    section_key,
)
from assistant.retrieval.freshness import FreshViews
from assistant.retrieval.fusion import (
    demote_superseded,
    fuse_scores,
    relevance,
    top_rows,
)
from assistant.retrieval.nomatch import (
    COVERAGE_HITS,
    NoMatchVerdict,
    content_terms,
    judge,
    term_coverage,
    unknown_words,
)
from assistant.retrieval.view import Readable, SearchView
from assistant.tokens import Tokenizer
from assistant.types import ANONYMOUS, Chunk, Hit, IndexSnapshot, SearchFilters, SearchResult, User
from assistant.words import valid_unicode

__all__ = ["CANDIDATES", "Retriever"]

logger = logging.getLogger(__name__)
# At most this many chunks, a question waits for the rows of a new generation
# (up to ``refresh_wait_s``) whatever its verdict; loading them is quick at this size.
SMALL_INDEX_CHUNKS = 20_000

CANDIDATES = 50


@dataclass(slots=True)
class _Scores:
    dense: npt.NDArray[np.float32] | None = None
    lexical: npt.NDArray[np.float32] | None = None
    dense_top: list[int] = field(default_factory=list)
    lexical_top: list[int] = field(default_factory=list)
    coverage: npt.NDArray[np.float32] | None = None
    fused: dict[int, float] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class _Run:
    """One search as it moves through the steps: each step reads and fills its part."""

    question: str
    view: SearchView
    k: int
    filters: SearchFilters | None
    started: float
    readable: Readable
    mask: npt.NDArray[np.bool_] | None = None
    scores: _Scores = field(default_factory=_Scores)
    kept: list[int] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    verdict: NoMatchVerdict | None = None
    trace: list[str] = field(default_factory=list)

    @property
    def chunks(self) -> Sequence[Chunk]:
        return self.view.snapshot.chunks

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.scores.timings[name] = time.perf_counter() - t0


class Retriever:
    """A `Searcher` over whatever snapshot ``snapshot_source`` returns at call time.

    Thread-safe: derived structures are swapped atomically when the snapshot's
    generation changes, and each search works on one consistent view.
    """

    def __init__(
        self,
        snapshot_source: Callable[[], IndexSnapshot] | IndexReader,
        embedder: Embedder,
        *,
        settings: RetrievalSettings,
        tokenizer: Tokenizer,
    ) -> None:
        self._embedder = embedder
        self.settings = settings
        self._tokenizer = tokenizer
        self._view: SearchView | None = None
        self._lock = threading.Lock()
        # Over an index reader, views are patched after an ingest off the question path.
        self._fresh: FreshViews | None = None
        if isinstance(snapshot_source, IndexReader):
            self._fresh = FreshViews(snapshot_source, self._build_view)
            self._source: Callable[[], IndexSnapshot] = snapshot_source.snapshot
        else:
            self._source = snapshot_source

    def snapshot(self) -> IndexSnapshot:
        """Return the index snapshot searches currently run on."""
        return self._source()

    def refreshed(self) -> bool:
        """Return whether searches see every row of the committed generation (not masked)."""
        return self._fresh is None or self._fresh.settled()

    def prepared_for(self, user: User) -> bool:
        """Return whether a question of ``user`` now finds its audience class's structures built."""
        return self._current_view().has_readable(user)

    @property
    def embedder(self) -> Embedder:
        """Return the model queries are embedded with (offline answers rank passages with it)."""
        return self._embedder

    def search(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        user: User = ANONYMOUS,
    ) -> SearchResult:
        """Return the best ``k`` hits for ``question`` that ``user`` may read, best first.

        Args:
            question: The question as the user typed it.
            k: How many hits (default ``settings.top_k``).
            filters: Restrict to sources, tags or an effective-date range.
            user: Who asks: only the rows ``user`` may read are scored, counted in the
                BM25 statistics, expanded, traced or named (`SearchView.readable`).

        Returns:
            The hits with section text, whether the best is below ``min_score``,
            and trace lines.

        Raises:
            IndexNotFoundError: There is no index yet.
            IndexMismatchError: The index vectors have another dimension than the embedder's.
            EmbeddingError: The query could not be embedded.
        """
        started = time.perf_counter()
        view = self._current_view()
        k = self.settings.top_k if k is None else max(1, k)
        # Tokenizers raise on lone surrogates; whatever the caller passes is searchable.
        question = valid_unicode(question)
        run = _Run(question, view, k, filters, started=started, readable=view.readable(user))
        self._run_steps(run)
        waited = self._wait_for_rows(run)
        if waited is not None:
            view, note = waited
            run = _Run(question, view, k, filters, started=started, readable=view.readable(user))
            run.trace.append(note)
            self._run_steps(run)
        return self._result(run)

    def _run_steps(self, run: _Run) -> None:
        for step in (self._restrict, self._score, self._fuse, self._expand, self._judge):
            step(run)

    def _wait_for_rows(self, run: _Run) -> tuple[SearchView, str] | None:
        """Return the view to search again when ``run`` found nothing on a pending view.

        Between an ingest and the end of its patch, an edited or added document is
        left out (`assistant.retrieval.freshness`); a question about it would get
        "no good match". It waits up to ``refresh_wait_s`` for the rows instead,
        and is searched once more if they came. On an index of at most
        `SMALL_INDEX_CHUNKS` chunks it waits whatever the verdict: a document an
        ingest has just granted to the asker is then cited on their first question,
        though other documents matched (round three, finding D29). Every user
        waits alike, so the wait tells no one what changed.
        """
        wait = self.settings.refresh_wait_s
        verdict = run.verdict
        if self._fresh is None or not run.view.pending or wait <= 0 or verdict is None:
            return None
        small = len(run.view.snapshot.chunks) <= SMALL_INDEX_CHUNKS
        if not verdict.no_good_match and not small:
            return None
        t0 = time.perf_counter()
        settled = self._fresh.wait(wait)
        took = (time.perf_counter() - t0) * 1000
        view = self._fresh.current()
        if not settled or view is run.view:
            run.trace.append(
                f"refresh: waited {took:.0f} ms for the rows of generation "
                f"{run.view.generation}; not loaded yet"
            )
            return None
        why = "no good match" if verdict.no_good_match else "a small index"
        note = (
            f"refresh: {why} while generation {run.view.generation} was loading; "
            f"waited {took:.0f} ms for its rows and searched again"
        )
        return view, note

    def _restrict(self, run: _Run) -> None:
        """Step 1: the rows the user may read and the filters allow (None: every row)."""
        access, filtered = run.readable.mask, run.view.mask(run.filters)
        if access is not None and filtered is not None:
            run.mask = access & filtered
        else:
            run.mask = access if filtered is None else filtered
        run.trace.append(f"index: generation {run.view.generation}")
        live = run.view.live
        if run.view.pending and live is not None:
            # Only rows this user may read are counted: the rest would tell what is hidden.
            left_out = ~live if access is None else ~live & access
            run.trace.append(
                f"refresh: generation {run.view.generation} seen, {int(left_out.sum())} changed "
                f"chunks of {run.view.snapshot.generation} left out until its rows are loaded"
            )
        if run.mask is not None and run.filters not in (None, SearchFilters()):
            # Counts of readable rows only: the total would tell how much is hidden.
            eligible = f"{int(run.mask.sum())} of {run.readable.count} chunks eligible"
            run.trace.append(f"filters: {eligible} ({run.filters})")
        if run.filters is not None and (run.filters.date_from or run.filters.date_to):
            run.trace.append("dates: " + _dates_label(run.view, run.readable))

    def _score(self, run: _Run) -> None:
        """Step 2: dense and lexical scores of the eligible rows, and each one's top rows."""
        out, mask = run.scores, run.mask
        mode = self.settings.mode
        query = np.zeros(0, dtype=np.float32)
        if mode != "lexical":
            with run.timed("embed"):
                query = np.asarray(self._embedder.embed([run.question])[0], dtype=np.float32)
            with run.timed("dense"):
                out.dense = run.readable.dense(query, len(run.chunks), mask)
                out.dense_top = top_rows(out.dense, CANDIDATES)
        if mode != "dense":
            with run.timed("lexical"):
                lexical = run.readable.lexical_scores(
                    run.question, title_weight=self.settings.title_weight, size=len(run.chunks)
                )
                if mask is not None:
                    lexical = np.where(mask, lexical, np.float32(0))
                out.lexical = lexical
                out.lexical_top = top_rows(lexical, CANDIDATES, positive_only=True)
                if mode == "hybrid" and self.settings.coverage_weight > 0:
                    out.coverage = run.readable.lexical_coverage(run.question, size=len(run.chunks))
            if out.dense is not None:
                # Over int8 vectors only the dense candidates got a cosine: fusion needs theirs.
                run.readable.exact(out.dense, query, out.lexical_top)
        run.trace += _candidate_lines(out, run.chunks)

    def _fuse(self, run: _Run) -> None:
        """Step 3: fuse the candidates, demote neighbours and superseded versions, drop repeats."""
        scores, chunks, replaced_by = run.scores, run.chunks, run.readable.replaced_by
        with run.timed("fuse"):
            candidates = list(dict.fromkeys([*scores.dense_top, *scores.lexical_top]))
            fused = fuse_scores(
                candidates,
                dense=scores.dense,
                lexical=scores.lexical,
                lexical_weight=self.settings.lexical_weight,
                coverage=scores.coverage,
                coverage_weight=self.settings.coverage_weight,
            )
            fused = demote_neighbours(fused, chunks, penalty=self.settings.neighbour_penalty)
            scores.fused = dict(fused)
            order = demote_superseded(
                fused, source_of=lambda r: chunks[r].source, replaced_by=replaced_by
            )
            run.kept, dropped = collapse_near_duplicates(order, chunks)
            run.trace.append("fused: " + _rows_label(order[:10], chunks))
            demoted = [r for r in run.kept if chunks[r].source in replaced_by]
            if demoted:
                run.trace.append("superseded, demoted: " + _rows_label(demoted[:10], chunks))
            if dropped:
                run.trace.append("near-duplicates dropped: " + _rows_label(dropped[:10], chunks))

    def _expand(self, run: _Run) -> None:
        """Step 4: the top ``k`` rows as hits, each with its section text (small to big)."""
        with run.timed("expand"):
            run.hits = self._hits(run, run.kept[: run.k])

    def _judge(self, run: _Run) -> None:
        """Step 5: decide "no good match" and say why in the trace."""
        run.verdict = self._verdict(run)
        s = self.settings
        run.trace.append(
            run.verdict.explain(
                min_coverage=s.min_coverage, min_cosine=s.min_cosine, min_score=s.min_score
            )
        )

    def _result(self, run: _Run) -> SearchResult:
        verdict, timings = run.verdict, run.scores.timings
        assert verdict is not None  # the judge step always runs
        timings["total"] = time.perf_counter() - run.started
        run.trace.append(
            "timings: " + ", ".join(f"{n} {s * 1000:.1f} ms" for n, s in timings.items())
        )
        logger.debug(
            "search: %d hits, best %.3f, %d chunks",
            len(run.hits),
            verdict.best_score,
            len(run.chunks),
        )
        question = run.question
        unknown = unknown_words(question, verdict.missing, run.readable.document_frequency)
        return SearchResult(
            query=question,
            hits=tuple(run.hits),
            no_good_match=verdict.no_good_match,
            trace=tuple(run.trace),
            no_match_reason=verdict.reason(
                question=question, min_score=self.settings.min_score, unknown=unknown
            ),
            unknown_words=unknown,
        )

    def _verdict(self, run: _Run) -> NoMatchVerdict:
        """Judge "no good match" from term coverage of the top hits and the top cosine."""
        chunks, scores, hits = run.chunks, run.scores, run.hits
        coverage, missing = term_coverage(
            content_terms(run.question),
            (chunks[r].text for r in run.kept[:COVERAGE_HITS]),
            document_frequency=run.readable.document_frequency,
            documents=run.readable.count,
        )
        top_cosine = None
        if scores.dense is not None and scores.dense_top:
            top_cosine = float(scores.dense[scores.dense_top[0]])
        return judge(
            coverage=coverage,
            missing=missing,
            top_cosine=top_cosine,
            best_score=max((h.score for h in hits), default=0.0),
            has_hits=bool(hits),
            min_coverage=self.settings.min_coverage,
            min_cosine=self.settings.min_cosine,
            min_score=self.settings.min_score,
        )

    def _current_view(self) -> SearchView:
        if self._fresh is not None:
            return self._fresh.current()
        snapshot = self._source()
        view = self._view
        if view is not None and view.snapshot.generation == snapshot.generation:
            return view
        with self._lock:
            view = self._view
            if view is None or view.snapshot.generation != snapshot.generation:
                view = self._build_view(snapshot)
                self._view = view
            return view

    def _build_view(self, snapshot: IndexSnapshot) -> SearchView:
        _check_dimension(snapshot, self._embedder)
        t0 = time.perf_counter()
        view = SearchView.build(snapshot, int8_above=self.settings.dense_int8_above)
        logger.info(
            "search index for generation %s built: %d chunks in %.0f ms",
            snapshot.generation,
            len(snapshot.chunks),
            (time.perf_counter() - t0) * 1000,
        )
        return view

    def _hits(self, run: _Run, rows: Sequence[int]) -> list[Hit]:
        view, scores, replaced_by = run.view, run.scores, run.readable.replaced_by
        hits: list[Hit] = []
        seen_sections: set[SectionKey] = set()
        budget = self.settings.section_tokens
        for rank, row in enumerate(rows, start=1):
            chunk = view.snapshot.chunks[row]
            meta = view.snapshot.docs.get(chunk.source)
            dense = None if scores.dense is None else float(scores.dense[row])
            lexical = None if scores.lexical is None else float(scores.lexical[row])
            key = section_key(chunk)
            section = ""
            if key not in seen_sections:
                seen_sections.add(key)
                section = view.section_text(chunk, tokenizer=self._tokenizer).window(
                    chunk, budget=budget
                )
            hits.append(
                Hit(
                    chunk=chunk,
                    rank=rank,
                    score=relevance(
                        fused=scores.fused.get(row, 0.0),
                        dense=dense,
                        lexical=lexical,
                        superseded=chunk.source in replaced_by,
                    ),
                    title=meta.title if meta else chunk.source,
                    effective_date=meta.effective_date if meta else "",
                    dense_score=dense or 0.0,
                    lexical_score=lexical or 0.0,
                    section_text=section,
                    superseded=chunk.source in replaced_by,
                    tags=meta.tags if meta else (),
                )
            )
        return hits


def _check_dimension(snapshot: IndexSnapshot, embedder: Embedder) -> None:
    if snapshot.vectors.size and snapshot.vectors.shape[1] != embedder.dimension:
        raise IndexMismatchError(
            f"the index holds {snapshot.vectors.shape[1]}-dimensional vectors but the "
            f"embedding model {embedder.identity} makes {embedder.dimension}; re-run the ingest"
        )


def _dates_label(view: SearchView, readable: Readable, limit: int = 12) -> str:
    """Each readable document's date and where it came from, so a date filter can be read."""
    labels = []
    for source in readable.sources[:limit]:
        meta = view.snapshot.docs.get(source)
        date = (meta.effective_date or meta.updated_date) if meta else ""
        where = f" ({meta.date_source})" if meta and meta.date_source else ""
        labels.append(f"{source} {date or 'undated'}{where}")
    more = len(readable.sources) - limit
    return "; ".join(labels) + (f"; and {more} more" if more > 0 else "")


def _rows_label(rows: Sequence[int], chunks: Sequence[Chunk]) -> str:
    return ", ".join(chunks[r].chunk_id for r in rows) or "(none)"


def _candidate_lines(scores: _Scores, chunks: Sequence[Chunk]) -> list[str]:
    lines = []
    for name, top, values in (
        ("dense", scores.dense_top, scores.dense),
        ("lexical", scores.lexical_top, scores.lexical),
    ):
        if values is not None:
            shown = ", ".join(f"{chunks[r].chunk_id} {float(values[r]):.3f}" for r in top[:5])
            lines.append(f"{name} top {len(top)}: {shown or '(none)'}")
    return lines
