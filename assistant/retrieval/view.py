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

import bisect
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from assistant.retrieval.dense import Int8Vectors, exact_scores, int8_candidates
from assistant.retrieval.expansion import SectionKey, SectionText, section_key
from assistant.retrieval.fusion import superseded_by
from assistant.retrieval.lexical import FieldedLexicalIndex, PatchedLexicalIndex, path_words
from assistant.tokens import Tokenizer
from assistant.types import Chunk, DocMeta, IndexSnapshot, SearchFilters, User, chunk_id

__all__ = ["Readable", "SearchView", "dense_scores", "title_field"]

_SECTION_CACHE = 4096
Lexical = FieldedLexicalIndex | PatchedLexicalIndex
# Rows scored outside bm25s (`PatchedLexicalIndex`) before a full BM25 build: each
# costs a question a few microseconds per query term.
_MAX_ADDED = 2000
# Distinct audience classes (sets of readable documents) kept per generation; a
# deployment has a handful (one per combination of groups its users have).
_READABLE_CACHE = 16


@dataclass(frozen=True, slots=True)
class Readable:
    """The part of one snapshot a class of users may read, with its own statistics.

    ``rows`` are the readable rows (None: all). ``lexical`` is built over those
    rows only, so BM25's IDF and average length, the title field's IDF and the
    document frequencies behind the "no good match" verdict and the unknown-word
    note never count a document the user cannot read. ``vectors`` are the
    readable rows' vectors, contiguous, for the dense product; ``int8`` the same
    as int8 when the index is large enough to scan those (`assistant.retrieval.dense`).
    """

    rows: npt.NDArray[np.int64] | None
    mask: npt.NDArray[np.bool_] | None
    lexical: Lexical
    vectors: npt.NDArray[np.float32]
    sources: tuple[str, ...]
    replaced_by: dict[str, frozenset[str]]
    int8: Int8Vectors | None = None

    @property
    def count(self) -> int:
        """Return how many chunks are readable."""
        return self.lexical.size

    @property
    def document_frequency(self) -> dict[str, int]:
        """Return how many readable chunk texts contain each term."""
        return self.lexical.document_frequency

    def lexical_scores(
        self, question: str, *, title_weight: float, size: int
    ) -> npt.NDArray[np.float32]:
        """Return BM25 per snapshot row (``size`` rows; 0 for unreadable rows)."""
        scores = self.lexical.scores(question, title_weight=title_weight)
        if self.rows is None:
            return scores
        full = np.zeros(size, dtype=np.float32)
        full[self.rows] = scores
        return full

    def lexical_coverage(self, question: str, *, size: int) -> npt.NDArray[np.float32]:
        """Return per snapshot row the share of the question's terms it holds (0 if unreadable)."""
        shares = self.lexical.coverage(question)
        if self.rows is None:
            return shares
        full = np.zeros(size, dtype=np.float32)
        full[self.rows] = shares
        return full

    def dense(
        self,
        query: npt.NDArray[np.float32],
        size: int,
        mask: npt.NDArray[np.bool_] | None = None,
    ) -> npt.NDArray[np.float32]:
        """Return the cosine per snapshot row, ``-inf`` for unreadable rows and outside ``mask``.

        Over int8 vectors only the best `RESCORE` eligible rows get a cosine (exact);
        `exact` gives others theirs.
        """
        local = mask if mask is None or self.rows is None else mask[self.rows]
        if mask is not None and mask is self.mask:
            local = None
        if self.int8 is None:
            scores = dense_scores(self.vectors, query, local)
        else:
            scores = int8_candidates(self.vectors, self.int8, query, local)
        if self.rows is None:
            return scores
        out = np.full(size, -np.inf, dtype=np.float32)
        out[self.rows] = scores
        return out

    def exact(
        self,
        scores: npt.NDArray[np.float32],
        query: npt.NDArray[np.float32],
        rows: Sequence[int],
    ) -> None:
        """Fill in the exact cosine of those readable ``rows`` (snapshot rows) left ``-inf``."""
        wanted = np.asarray([r for r in rows if scores[r] == -np.inf], dtype=np.int64)
        if not wanted.size:
            return
        local = wanted if self.rows is None else np.searchsorted(self.rows, wanted)
        scores[wanted] = exact_scores(self.vectors, query, local)


@dataclass(slots=True)
class SearchView:
    """Structures derived from one snapshot generation (rebuilt when it changes).

    A section's rows and a chunk ID's row are looked up through ``source_ids``
    (the rows of one document) rather than kept in per-chunk maps, so a view
    patched from another costs work for the changed rows only (`patched`).
    """

    snapshot: IndexSnapshot
    lexical: Lexical
    sources: tuple[str, ...]
    source_ids: npt.NDArray[np.int32]
    replaced_by: dict[str, frozenset[str]]
    section_cache: dict[SectionKey, SectionText] = field(default_factory=dict)
    readable_cache: OrderedDict[bytes, Readable] = field(default_factory=OrderedDict)
    readable_lock: threading.Lock = field(default_factory=threading.Lock)
    # The generation this view answers for; newer than the snapshot's when rows are masked.
    generation: str = ""
    # Rows that may be served (None: all): False for rows a newer ingest wrote or deleted.
    live: npt.NDArray[np.bool_] | None = None
    # Whether every chunk ID is ``source#ordinal`` (`chunk_id`), so it names its document.
    named_ids: bool = True
    row_cache: dict[str, int] | None = None
    # The vectors as int8 for the dense scan (None: float32 only), kept when the
    # index holds at least ``int8_above`` chunks.
    int8: Int8Vectors | None = None
    int8_above: int = 0
    # One user of each audience class asked for (the first seen), by readable key:
    # the classes whose structures the next generation prepares before it serves.
    class_users: OrderedDict[bytes, User] = field(default_factory=OrderedDict)

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
        live[np.asarray(self.rows_of(chunk_ids), dtype=np.int64)] = False
        return replace(self, live=live, generation=generation)

    def rows_of(self, chunk_ids: Iterable[str]) -> list[int]:
        """Return the rows of those of ``chunk_ids`` this view holds."""
        if not self.named_ids:
            if self.row_cache is None:
                self.row_cache = {c.chunk_id: r for r, c in enumerate(self.snapshot.chunks)}
            return [self.row_cache[c] for c in chunk_ids if c in self.row_cache]
        by_source: dict[str, list[str]] = {}
        for cid in chunk_ids:
            by_source.setdefault(cid.rpartition("#")[0], []).append(cid)
        chunks, found = self.snapshot.chunks, []
        for source, ids in by_source.items():
            here = {chunks[r].chunk_id: int(r) for r in self.source_rows(source)}
            found += [here[c] for c in ids if c in here]
        return found

    def source_rows(self, source: str) -> npt.NDArray[np.int64]:
        """Return the rows of ``source``, in row order."""
        i = bisect.bisect_left(self.sources, source)
        if i == len(self.sources) or self.sources[i] != source:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(self.source_ids == i)

    @classmethod
    def build(
        cls, snapshot: IndexSnapshot, *, lexical: Lexical | None = None, int8_above: int = 0
    ) -> SearchView:
        """Derive the structures from ``snapshot`` (BM25 indexing dominates the cost).

        ``int8_above``: keep int8 vectors for the dense scan from this many chunks
        on (0: never).
        """
        if lexical is None:
            lexical = FieldedLexicalIndex(
                [c.text for c in snapshot.chunks],
                [title_field(c, snapshot.docs.get(c.source)) for c in snapshot.chunks],
            )
        sources = tuple(sorted({c.source for c in snapshot.chunks} | set(snapshot.docs)))
        position = {s: i for i, s in enumerate(sources)}
        return cls(
            snapshot=snapshot,
            lexical=lexical,
            sources=sources,
            source_ids=np.array([position[c.source] for c in snapshot.chunks], dtype=np.int32),
            replaced_by=superseded_by(snapshot.docs),
            generation=snapshot.generation,
            named_ids=all(c.chunk_id == chunk_id(c.source, c.ordinal) for c in snapshot.chunks),
            int8=_int8_of(snapshot.vectors, int8_above),
            int8_above=int8_above,
        )

    def readable(self, user: User) -> Readable:
        """Return what ``user`` may read (built once per audience class and generation)."""
        allowed = self._allowed(user)
        key = allowed.tobytes()
        with self.readable_lock:
            cached = self.readable_cache.get(key)
            if cached is not None:
                self.readable_cache.move_to_end(key)
                return cached
        return self._keep(key, user, self._build_readable(allowed))

    def has_readable(self, user: User) -> bool:
        """Return whether what ``user`` may read is built already (`readable` costs nothing)."""
        key = self._allowed(user).tobytes()
        with self.readable_lock:
            return key in self.readable_cache

    def _allowed(self, user: User) -> npt.NDArray[np.bool_]:
        docs = self.snapshot.docs
        return np.array(
            [user.may_read(docs[s].audience if s in docs else ()) for s in self.sources],
            dtype=np.bool_,
        )

    def _keep(self, key: bytes, user: User, built: Readable) -> Readable:
        with self.readable_lock:
            self.readable_cache[key] = built
            self.class_users.setdefault(key, user)
            while len(self.readable_cache) > _READABLE_CACHE:
                self.readable_cache.popitem(last=False)
            while len(self.class_users) > _READABLE_CACHE:
                self.class_users.popitem(last=False)
        return built

    def prepare_classes(self, before: SearchView) -> int:
        """Build what each audience class ``before`` served may read here; return how many.

        Called off the question path once this view of a newer generation is built
        (`assistant.retrieval.freshness`), so that no question of a known class waits
        for a BM25 build after an ingest. A class's BM25 is patched from its
        structures in ``before`` when this view's snapshot was patched from
        ``before``'s (the changed rows only), else built afresh.
        """
        with before.readable_lock:
            users = list(before.class_users.values())
        for user in users:
            allowed = self._allowed(user)
            key = allowed.tobytes()
            with self.readable_lock:
                if key in self.readable_cache:
                    continue
            lexical = None if allowed.all() else self._patched_class(before, user, allowed)
            self._keep(key, user, self._build_readable(allowed, lexical=lexical))
        return len(users)

    def _patched_class(
        self, before: SearchView, user: User, allowed: npt.NDArray[np.bool_]
    ) -> Lexical | None:
        """Return the BM25 of ``allowed``'s rows patched from ``before``'s, or None to build it."""
        origin = self.snapshot.origin
        if origin is None or origin.generation != before.snapshot.generation:
            return None
        old = before.readable(user)
        rows = np.flatnonzero(allowed[self.source_ids])
        old_rows = origin.rows[rows]  # rows of ``before``'s snapshot, -1 for fetched rows
        if old.rows is None:
            local = old_rows
        elif not old.rows.size:
            local = np.full(rows.size, -1, dtype=np.int64)
        else:
            at = np.searchsorted(old.rows, old_rows).clip(max=old.rows.size - 1)
            local = np.where((old_rows >= 0) & (old.rows[at] == old_rows), at, -1)
        lexical = old.lexical
        root = lexical.root if isinstance(lexical, PatchedLexicalIndex) else lexical
        if isinstance(lexical, PatchedLexicalIndex):
            local = np.where(local >= 0, lexical.root_rows[local.clip(min=0)], -1)
        added = rows[local < 0]
        if added.size > _MAX_ADDED:
            return None
        chunks, docs = self.snapshot.chunks, self.snapshot.docs
        return PatchedLexicalIndex(
            root,
            local.astype(np.int64),
            [chunks[r].text for r in added],
            [title_field(chunks[r], docs.get(chunks[r].source)) for r in added],
        )

    def _build_readable(
        self, allowed: npt.NDArray[np.bool_], *, lexical: Lexical | None = None
    ) -> Readable:
        chunks, docs = self.snapshot.chunks, self.snapshot.docs
        sources = tuple(s for s, ok in zip(self.sources, allowed, strict=True) if ok)
        if allowed.all():
            return Readable(
                None,
                None,
                self.lexical,
                self.snapshot.vectors,
                sources,
                self.replaced_by,
                self.int8,
            )
        mask: npt.NDArray[np.bool_] = allowed[self.source_ids]
        rows = np.flatnonzero(mask).astype(np.int64)
        if lexical is None:
            lexical = FieldedLexicalIndex(
                [chunks[r].text for r in rows],
                [title_field(chunks[r], docs.get(chunks[r].source)) for r in rows],
            )
        vectors = np.ascontiguousarray(self.snapshot.vectors[rows])
        readable_docs = {s: docs[s] for s in sources if s in docs}
        int8 = None if self.int8 is None else self.int8.subset(rows)
        replaced = superseded_by(readable_docs)
        return Readable(rows, mask, lexical, vectors, sources, replaced, int8)

    def patched(self, snapshot: IndexSnapshot) -> SearchView | None:
        """Return the view of ``snapshot``, a patch of this view's, without a BM25 rebuild.

        Rows kept from this view's snapshot keep their BM25 row, document column
        and everything else, carried over by row mapping (``snapshot.origin``);
        only the fetched rows are looked at one by one and scored as added rows
        (`PatchedLexicalIndex`). None when too many rows were added since the
        last full build: build afresh.
        """
        origin = snapshot.origin
        if origin is None or origin.generation != self.snapshot.generation:
            return self._patched_by_id(snapshot)
        chunks, lexical = snapshot.chunks, self.lexical
        root = lexical.root if isinstance(lexical, PatchedLexicalIndex) else lexical
        kept = origin.rows >= 0
        old_rows = origin.rows[kept]
        rows = np.full(len(chunks), -1, dtype=np.int64)
        rows[kept] = (
            old_rows
            if not isinstance(lexical, PatchedLexicalIndex)
            else (lexical.root_rows[old_rows])
        )
        added = np.flatnonzero(rows < 0)
        if added.size > _MAX_ADDED:
            return None
        fetched = [chunks[r] for r in np.flatnonzero(~kept)]
        present = np.zeros(len(self.sources), dtype=np.bool_)
        present[self.source_ids[old_rows]] = True
        sources = tuple(
            sorted(
                {s for s, p in zip(self.sources, present, strict=True) if p}
                | {c.source for c in fetched}
                | set(snapshot.docs)
            )
        )
        position = {s: i for i, s in enumerate(sources)}
        remap = np.array([position.get(s, -1) for s in self.sources], dtype=np.int32)
        source_ids = np.empty(len(chunks), dtype=np.int32)
        source_ids[kept] = remap[self.source_ids[old_rows]]
        source_ids[~kept] = [position[c.source] for c in fetched]
        new = [chunks[r] for r in added]
        return SearchView(
            snapshot=snapshot,
            lexical=PatchedLexicalIndex(
                root,
                rows,
                [c.text for c in new],
                [title_field(c, snapshot.docs.get(c.source)) for c in new],
            ),
            sources=sources,
            source_ids=source_ids,
            replaced_by=superseded_by(snapshot.docs),
            generation=snapshot.generation,
            named_ids=self.named_ids
            and all(c.chunk_id == chunk_id(c.source, c.ordinal) for c in fetched),
            int8=self._int8_patched(snapshot, origin.rows),
            int8_above=self.int8_above,
        )

    def _int8_patched(
        self, snapshot: IndexSnapshot, rows: npt.NDArray[np.int64]
    ) -> Int8Vectors | None:
        """Return int8 vectors for ``snapshot``: carried over by row mapping when there are some."""
        if not self.int8_above or len(snapshot.chunks) < self.int8_above:
            return None
        if self.int8 is None:
            return Int8Vectors.of(snapshot.vectors)
        return self.int8.taken(rows, snapshot.vectors[rows < 0])

    def _patched_by_id(self, snapshot: IndexSnapshot) -> SearchView | None:
        """`patched` for a snapshot that does not say where its rows came from."""
        lexical = self.lexical
        root = lexical.root if isinstance(lexical, PatchedLexicalIndex) else lexical
        earlier = lexical.root_rows if isinstance(lexical, PatchedLexicalIndex) else None
        old_chunks = self.snapshot.chunks
        row_of = {c.chunk_id: r for r, c in enumerate(old_chunks)}
        rows = np.full(len(snapshot.chunks), -1, dtype=np.int64)
        texts: list[str] = []
        titles: list[str] = []
        for row, chunk in enumerate(snapshot.chunks):
            old = row_of.get(chunk.chunk_id)
            if old is not None and old_chunks[old] is chunk:
                rows[row] = old if earlier is None else earlier[old]
            if rows[row] < 0:
                texts.append(chunk.text)
                titles.append(title_field(chunk, snapshot.docs.get(chunk.source)))
        if len(texts) > _MAX_ADDED:
            return None
        lexical = PatchedLexicalIndex(root, rows, texts, titles)
        return SearchView.build(snapshot, lexical=lexical, int8_above=self.int8_above)

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
            chunks = self.snapshot.chunks
            rows = [r for r in self.source_rows(chunk.source) if section_key(chunks[r]) == key]
            cached = SectionText([chunks[r] for r in rows], tokenizer=tokenizer)
            self.section_cache[key] = cached
        return cached


def _int8_of(vectors: npt.NDArray[np.float32], above: int) -> Int8Vectors | None:
    return Int8Vectors.of(vectors) if above and vectors.shape[0] >= above else None


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
