"""Hybrid search over an in-memory index snapshot: dense cosine + BM25, fused by weighted sum.

Per search: take the current `IndexSnapshot` (rebuilding the BM25 index, filter
columns and section map when its generation changed), restrict rows with the
filters as boolean masks, score the eligible rows densely (one matrix-vector
product) and lexically (BM25), fuse the two top-50 lists, demote superseded
documents, collapse overlapping chunks of one section, and expand the top ``k``
into their sections (small to big). See `assistant.fusion` for the fusion and
for how ``Hit.score`` is defined.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from assistant.config import RetrievalSettings
from assistant.errors import IndexMismatchError
from assistant.expansion import SectionKey, collapse_near_duplicates, section_key
from assistant.fusion import (
    demote_superseded,
    fuse_scores,
    relevance,
    top_rows,
)
from assistant.nomatch import (
    COVERAGE_HITS,
    NoMatchVerdict,
    content_terms,
    judge,
    term_coverage,
    unknown_words,
)
from assistant.protocols import Embedder
from assistant.search_view import SearchView, dense_scores
from assistant.tokens import Tokenizer
from assistant.types import Chunk, Hit, IndexSnapshot, SearchFilters, SearchResult

__all__ = ["CANDIDATES", "Retriever"]

logger = logging.getLogger(__name__)

CANDIDATES = 50


@dataclass(slots=True)
class _Scores:
    dense: npt.NDArray[np.float32] | None = None
    lexical: npt.NDArray[np.float32] | None = None
    dense_top: list[int] = field(default_factory=list)
    lexical_top: list[int] = field(default_factory=list)
    fused: dict[int, float] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)


class Retriever:
    """A `Searcher` over whatever snapshot ``snapshot_source`` returns at call time.

    Thread-safe: derived structures are swapped atomically when the snapshot's
    generation changes, and each search works on one consistent view.
    """

    def __init__(
        self,
        snapshot_source: Callable[[], IndexSnapshot],
        embedder: Embedder,
        *,
        settings: RetrievalSettings,
        tokenizer: Tokenizer,
    ) -> None:
        self._source = snapshot_source
        self._embedder = embedder
        self.settings = settings
        self._tokenizer = tokenizer
        self._view: SearchView | None = None
        self._lock = threading.Lock()

    def snapshot(self) -> IndexSnapshot:
        """Return the index snapshot searches currently run on."""
        return self._source()

    def search(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
    ) -> SearchResult:
        """Return the best ``k`` hits for ``question``, best first.

        Args:
            question: The question as the user typed it.
            k: How many hits (default ``settings.top_k``).
            filters: Restrict to sources, tags or an effective-date range.

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
        mask = view.mask(filters)
        trace: list[str] = []
        if mask is not None:
            trace.append(f"filters: {int(mask.sum())} of {mask.size} chunks eligible ({filters})")
        scores = self._score(view, question, mask)
        chunks = view.snapshot.chunks
        trace += _candidate_lines(scores, chunks)
        t0 = time.perf_counter()
        candidates = list(dict.fromkeys([*scores.dense_top, *scores.lexical_top]))
        fused = fuse_scores(candidates, dense=scores.dense, lexical=scores.lexical)
        scores.fused = dict(fused)
        order = demote_superseded(
            fused, source_of=lambda r: chunks[r].source, replaced_by=view.replaced_by
        )
        kept, dropped = collapse_near_duplicates(order, chunks)
        trace.append("fused: " + _rows_label(order[:10], chunks))
        demoted = [r for r in kept if chunks[r].source in view.replaced_by]
        if demoted:
            trace.append("superseded, demoted: " + _rows_label(demoted[:10], chunks))
        if dropped:
            trace.append("near-duplicates dropped: " + _rows_label(dropped[:10], chunks))
        scores.timings["fuse"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        hits = self._hits(view, kept[:k], scores)
        scores.timings["expand"] = time.perf_counter() - t0
        verdict = self._verdict(view, question, kept, scores, hits)
        s = self.settings
        trace.append(
            verdict.explain(
                min_coverage=s.min_coverage, min_cosine=s.min_cosine, min_score=s.min_score
            )
        )
        scores.timings["total"] = time.perf_counter() - started
        trace.append(
            "timings: " + ", ".join(f"{n} {s * 1000:.1f} ms" for n, s in scores.timings.items())
        )
        logger.debug(
            "search: %d hits, best %.3f, %d chunks", len(hits), verdict.best_score, len(chunks)
        )
        return SearchResult(
            query=question,
            hits=tuple(hits),
            no_good_match=verdict.no_good_match,
            trace=tuple(trace),
            no_match_reason=verdict.reason(question=question, min_score=s.min_score),
            unknown_words=unknown_words(question, verdict.missing, view.lexical.document_frequency),
        )

    def _verdict(
        self,
        view: SearchView,
        question: str,
        kept: Sequence[int],
        scores: _Scores,
        hits: Sequence[Hit],
    ) -> NoMatchVerdict:
        """Judge "no good match" from term coverage of the top hits and the top cosine."""
        chunks = view.snapshot.chunks
        coverage, missing = term_coverage(
            content_terms(question),
            (chunks[r].text for r in kept[:COVERAGE_HITS]),
            document_frequency=view.lexical.document_frequency,
            documents=len(chunks),
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
        snapshot = self._source()
        view = self._view
        if view is not None and view.snapshot.generation == snapshot.generation:
            return view
        with self._lock:
            view = self._view
            if view is None or view.snapshot.generation != snapshot.generation:
                _check_dimension(snapshot, self._embedder)
                t0 = time.perf_counter()
                view = SearchView.build(snapshot)
                logger.info(
                    "search index for generation %s built: %d chunks in %.0f ms",
                    snapshot.generation,
                    len(snapshot.chunks),
                    (time.perf_counter() - t0) * 1000,
                )
                self._view = view
            return view

    def _score(
        self, view: SearchView, question: str, mask: npt.NDArray[np.bool_] | None
    ) -> _Scores:
        out = _Scores()
        mode = self.settings.mode
        if mode != "lexical":
            t0 = time.perf_counter()
            query = np.asarray(self._embedder.embed([question])[0], dtype=np.float32)
            out.timings["embed"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            out.dense = dense_scores(view.snapshot.vectors, query, mask)
            out.dense_top = top_rows(out.dense, CANDIDATES)
            out.timings["dense"] = time.perf_counter() - t0
        if mode != "dense":
            t0 = time.perf_counter()
            lexical = view.lexical.scores(question)
            if mask is not None:
                lexical = np.where(mask, lexical, np.float32(0))
            out.lexical = lexical
            out.lexical_top = top_rows(lexical, CANDIDATES, positive_only=True)
            out.timings["lexical"] = time.perf_counter() - t0
        return out

    def _hits(self, view: SearchView, rows: Sequence[int], scores: _Scores) -> list[Hit]:
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
                        superseded=chunk.source in view.replaced_by,
                    ),
                    title=meta.title if meta else chunk.source,
                    effective_date=meta.effective_date if meta else "",
                    dense_score=dense or 0.0,
                    lexical_score=lexical or 0.0,
                    section_text=section,
                    superseded=chunk.source in view.replaced_by,
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
