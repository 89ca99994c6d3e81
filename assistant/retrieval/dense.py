"""The dense scan: exact float32 cosines, or int8 candidates re-scored exactly.

A question's dense step reads every vector: at 100k chunks of 384 float32
dimensions that is 154 MB per question, and the scan is bound by memory
bandwidth. Above a configurable size (``RetrievalSettings.dense_int8_above``)
the view also keeps the vectors as int8, transposed (38 MB at 100k), scores
every row with onnxruntime's integer kernel (`assistant.embeddings.local.int8_scores`),
and re-scores the best `RESCORE` eligible rows in float32. Only those rows get a
cosine (every other row is ``-inf``), so what a search ranks, fuses and reports
is always the exact cosine; a row the int8 scores put below `RESCORE` and the
exact ones in the top 50 is the only way a result can differ (none on the
sample and dev sets, docs/scaling.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from assistant.embeddings.local import int8_scores

__all__ = ["RESCORE", "Int8Vectors", "exact_scores", "int8_candidates"]

# Rows re-scored in float32 after the int8 pass (the search keeps 50 dense candidates).
RESCORE = 200
# The query's int8 range: u8 x s8 products are summed in pairs into int16 (see int8_scores).
_QUERY_LEVELS = 63
# Below this share of eligible rows, gathering them for an exact scan is cheaper.
_GATHER_SHARE = 16
_BLOCK = 16384


@dataclass(frozen=True, slots=True, eq=False)
class Int8Vectors:
    """Vectors as int8, one column per row, with each column's sum.

    ``scale`` maps a float component to its int8 level (``round(x * scale)``),
    shared by every row so all rows score on one scale.
    """

    matrix: npt.NDArray[np.int8]
    column_sums: npt.NDArray[np.int32]
    scale: float

    @classmethod
    def of(cls, vectors: npt.NDArray[np.float32], scale: float | None = None) -> Int8Vectors:
        """Quantize ``vectors`` (rows); ``scale`` defaults to fit the largest component."""
        if scale is None:
            peak = float(np.abs(vectors).max()) if vectors.size else 1.0
            scale = 127.0 / (peak or 1.0)
        matrix = np.empty((vectors.shape[1], vectors.shape[0]), dtype=np.int8)
        for start in range(0, vectors.shape[0], _BLOCK):  # blocks: no float copy of the whole
            block = vectors[start : start + _BLOCK]
            levels = np.clip(np.rint(block * np.float32(scale)), -127, 127)
            matrix[:, start : start + block.shape[0]] = levels.T
        return cls(matrix, _column_sums(matrix), scale)

    def taken(self, rows: npt.NDArray[np.int64], fresh: npt.NDArray[np.float32]) -> Int8Vectors:
        """Return the vectors of a patched snapshot: column ``rows[i]`` of these, or a fresh one.

        ``rows[i]`` is -1 for a fetched row; ``fresh`` holds their float vectors,
        in row order, quantized on this scale (so no other row changes).
        """
        kept = rows >= 0
        matrix = np.empty((self.matrix.shape[0], rows.size), dtype=np.int8)
        matrix[:, kept] = self.matrix[:, rows[kept]]
        added = Int8Vectors.of(fresh, self.scale).matrix
        matrix[:, ~kept] = added
        sums = np.empty(rows.size, dtype=np.int32)
        sums[kept] = self.column_sums[rows[kept]]
        sums[~kept] = _column_sums(added)
        return Int8Vectors(matrix, sums, self.scale)

    def subset(self, rows: npt.NDArray[np.int64]) -> Int8Vectors:
        """Return the columns of ``rows`` (the rows one audience may read)."""
        matrix = np.ascontiguousarray(self.matrix[:, rows])
        return Int8Vectors(matrix, self.column_sums[rows], self.scale)

    def approximate(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.int32]:
        """Return each row's dot product with ``query``, up to one positive factor per query."""
        peak = float(np.abs(query).max()) or 1.0
        levels = np.rint(query * np.float32(_QUERY_LEVELS / peak)).astype(np.int16)
        shifted = (levels + (_QUERY_LEVELS + 1)).astype(np.uint8)  # 1..127
        raw = int8_scores(shifted, self.matrix)
        dots: npt.NDArray[np.int32] = raw - np.int32(_QUERY_LEVELS + 1) * self.column_sums
        return dots


def _column_sums(matrix: npt.NDArray[np.int8]) -> npt.NDArray[np.int32]:
    sums: npt.NDArray[np.int32] = matrix.sum(axis=0, dtype=np.int32)
    return sums


def exact_scores(
    vectors: npt.NDArray[np.float32],
    query: npt.NDArray[np.float32],
    rows: npt.NDArray[np.int64],
) -> npt.NDArray[np.float32]:
    """Return the float32 cosines of ``rows`` (vectors are normalised)."""
    if not rows.size:
        return np.zeros(0, dtype=np.float32)
    scores: npt.NDArray[np.float32] = np.einsum("ij,j->i", vectors[rows], query)
    return scores


def int8_candidates(
    vectors: npt.NDArray[np.float32],
    quantized: Int8Vectors,
    query: npt.NDArray[np.float32],
    eligible: npt.NDArray[np.bool_] | None,
) -> npt.NDArray[np.float32]:
    """Return the exact cosine of the best `RESCORE` eligible rows, ``-inf`` elsewhere.

    The best rows are chosen by the int8 scores; when few rows are eligible
    (a source filter) they are all scored exactly instead.
    """
    size = vectors.shape[0]
    out = np.full(size, -np.inf, dtype=np.float32)
    if eligible is not None:
        rows = np.flatnonzero(eligible)
        if rows.size <= max(RESCORE, size // _GATHER_SHARE):
            out[rows] = exact_scores(vectors, query, rows)
            return out
    approx = quantized.approximate(query)
    if eligible is not None:
        approx = np.where(eligible, approx, np.iinfo(np.int32).min)
    count = min(RESCORE, size)
    best = np.argpartition(-approx.astype(np.int64), count - 1)[:count] if count < size else None
    top = np.arange(size, dtype=np.int64) if best is None else best.astype(np.int64)
    if eligible is not None:
        top = top[eligible[top]]
    out[top] = exact_scores(vectors, query, top)
    return out
