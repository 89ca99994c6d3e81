"""What a search needs from one index snapshot, built once per generation.

`SearchView` holds the BM25 index, each row's source as an integer column (so
filters are boolean masks, not Chroma ``where`` clauses), the rows of each
section for small-to-big expansion, and which documents are superseded.

A view can also stand for a newer generation than its snapshot's: `SearchView.masked`
shares every structure and masks out the rows a later ingest wrote or deleted,
so a reader serves at once without them while the patched view is built
(`assistant.retrieval.freshness`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from assistant.retrieval.expansion import SectionKey, SectionText, section_key
from assistant.retrieval.fusion import superseded_by
from assistant.retrieval.lexical import FieldedLexicalIndex, PatchedLexicalIndex, path_words
from assistant.tokens import Tokenizer
from assistant.types import Chunk, DocMeta, IndexSnapshot, SearchFilters

__all__ = ["SearchView", "dense_scores", "title_field"]

_SECTION_CACHE = 4096
Lexical = FieldedLexicalIndex | PatchedLexicalIndex
# Rows scored outside bm25s (`PatchedLexicalIndex`) before a full BM25 build: each
# costs a question a few microseconds per query term.
_MAX_ADDED = 2000


@dataclass(slots=True)
class SearchView:
    """Structures derived from one snapshot generation (rebuilt when it changes)."""

    snapshot: IndexSnapshot
    lexical: Lexical
    sources: tuple[str, ...]
    source_ids: npt.NDArray[np.int32]
    sections: dict[SectionKey, list[int]]
    replaced_by: dict[str, frozenset[str]]
    section_cache: dict[SectionKey, SectionText] = field(default_factory=dict)
    row_of: dict[str, int] = field(default_factory=dict)
    # The generation this view answers for; newer than the snapshot's when rows are masked.
    generation: str = ""
    # Rows that may be served (None: all): False for rows a newer ingest wrote or deleted.
    live: npt.NDArray[np.bool_] | None = None

    @property
    def pending(self) -> bool:
        """Return whether this view masks rows of a newer generation it does not hold yet."""
        return self.generation != self.snapshot.generation

    def masked(self, chunk_ids: Iterable[str], *, generation: str) -> SearchView:
        """Return this view for ``generation``, without the rows of ``chunk_ids``.

        Cheap (the structures are shared): it is what a question gets while
        the view of the new generation is built in the background.
        """
        live = np.ones(len(self.snapshot.chunks), dtype=np.bool_)
        if self.live is not None:
            live = self.live.copy()
        rows = [self.row_of[c] for c in chunk_ids if c in self.row_of]
        live[np.asarray(rows, dtype=np.int64)] = False
        return replace(self, live=live, generation=generation)

    @classmethod
    def build(cls, snapshot: IndexSnapshot, *, lexical: Lexical | None = None) -> SearchView:
        """Derive the structures from ``snapshot`` (BM25 indexing dominates the cost)."""
        if lexical is None:
            lexical = FieldedLexicalIndex(
                [c.text for c in snapshot.chunks],
                [title_field(c, snapshot.docs.get(c.source)) for c in snapshot.chunks],
            )
        sources = tuple(sorted({c.source for c in snapshot.chunks} | set(snapshot.docs)))
        position = {s: i for i, s in enumerate(sources)}
        sections: dict[SectionKey, list[int]] = {}
        for row, chunk in enumerate(snapshot.chunks):
            sections.setdefault(section_key(chunk), []).append(row)
        return cls(
            snapshot=snapshot,
            lexical=lexical,
            sources=sources,
            source_ids=np.array([position[c.source] for c in snapshot.chunks], dtype=np.int32),
            sections=sections,
            replaced_by=superseded_by(snapshot.docs),
            row_of={c.chunk_id: row for row, c in enumerate(snapshot.chunks)},
            generation=snapshot.generation,
        )

    def patched(self, snapshot: IndexSnapshot) -> SearchView | None:
        """Return the view of ``snapshot``, a patch of this view's, without a BM25 rebuild.

        Rows whose chunk is the very object of this snapshot's row keep their BM25
        row; the others are scored as added rows (`PatchedLexicalIndex`). None
        when too many rows were added since the last full build: build afresh.
        """
        lexical = self.lexical
        root = lexical.root if isinstance(lexical, PatchedLexicalIndex) else lexical
        earlier = lexical.root_rows if isinstance(lexical, PatchedLexicalIndex) else None
        old_chunks = self.snapshot.chunks
        rows = np.full(len(snapshot.chunks), -1, dtype=np.int64)
        texts: list[str] = []
        titles: list[str] = []
        for row, chunk in enumerate(snapshot.chunks):
            old = self.row_of.get(chunk.chunk_id)
            if old is not None and old_chunks[old] is chunk:
                rows[row] = old if earlier is None else earlier[old]
            if rows[row] < 0:
                texts.append(chunk.text)
                titles.append(title_field(chunk, snapshot.docs.get(chunk.source)))
        if len(texts) > _MAX_ADDED:
            return None
        return SearchView.build(snapshot, lexical=PatchedLexicalIndex(root, rows, texts, titles))

    def mask(self, filters: SearchFilters | None) -> npt.NDArray[np.bool_] | None:
        """Return the eligible rows, or None when nothing is filtered or masked."""
        if filters is None or filters == SearchFilters():
            return self.live
        wanted = set(filters.tags)
        allowed = np.ones(len(self.sources), dtype=np.bool_)
        for i, source in enumerate(self.sources):
            meta = self.snapshot.docs.get(source)
            date = (meta.effective_date or meta.updated_date) if meta else ""
            allowed[i] = (
                (not filters.sources or source in filters.sources)
                and (not wanted or (meta is not None and not wanted.isdisjoint(meta.tags)))
                and (not filters.date_from or (bool(date) and date >= filters.date_from))
                and (not filters.date_to or (bool(date) and date[:10] <= filters.date_to))
            )
        result: npt.NDArray[np.bool_] = allowed[self.source_ids]
        return result if self.live is None else result & self.live

    def section_text(self, chunk: Chunk, *, tokenizer: Tokenizer) -> SectionText:
        """Return the (cached) section around ``chunk``, for small-to-big windows."""
        key = section_key(chunk)
        cached = self.section_cache.get(key)
        if cached is None:
            if len(self.section_cache) > _SECTION_CACHE:
                self.section_cache.clear()
            rows = self.sections.get(key, [])
            cached = SectionText([self.snapshot.chunks[r] for r in rows], tokenizer=tokenizer)
            self.section_cache[key] = cached
        return cached


def title_field(chunk: Chunk, meta: DocMeta | None) -> str:
    """Return ``chunk``'s title field for BM25: its document's title and the words of its path.

    The heading path is left out: it is already in every chunk's text, and
    weighting it twice measured worse (docs/retrieval-eval.md). The title comes
    from the metadata, since a document whose first heading is not its title
    has it in no chunk text.
    """
    title = meta.title if meta and meta.title else ""
    if not title and chunk.heading_path:
        title = chunk.heading_path[0]
    return f"{title}\n{path_words(chunk.source)}"


def dense_scores(
    vectors: npt.NDArray[np.float32],
    query: npt.NDArray[np.float32],
    mask: npt.NDArray[np.bool_] | None,
) -> npt.NDArray[np.float32]:
    """Return cosine per row (vectors are normalised); ineligible rows get ``-inf``.

    einsum rather than ``@``: a matrix-vector product through multithreaded
    OpenBLAS was up to 20x slower on a busy two-core machine (thread spinning),
    while einsum's single-threaded loop is steady and as fast when idle.
    """
    if mask is None:
        full: npt.NDArray[np.float32] = np.einsum("ij,j->i", vectors, query)
        return full
    out = np.full(vectors.shape[0], -np.inf, dtype=np.float32)
    rows = np.flatnonzero(mask)
    if rows.size * 2 > mask.size:
        out[mask] = np.einsum("ij,j->i", vectors, query)[mask]
    elif rows.size:
        out[rows] = np.einsum("ij,j->i", vectors[rows], query)
    return out
