"""Combining the dense and lexical rankings, scoring relevance and demoting stale versions.

Ranking fuses the two retrievers with a weighted sum of scores:
``cosine + LEXICAL_WEIGHT * bm25 / max_bm25`` (the BM25 maximum over this
query's eligible rows, so the lexical term is in [0, LEXICAL_WEIGHT]). Measured
on data/eval/questions.jsonl (75 questions, MiniLM): recall@1 0.81 and MRR@10
0.91, against 0.76 / 0.89 for dense alone and 0.64 / 0.77 for reciprocal rank
fusion (k=60), which let BM25 override good dense matches on paraphrases. RRF
stays available as `reciprocal_rank_fusion`. The weight in force is
``RetrievalSettings.lexical_weight`` (``ASSISTANT_LEXICAL_WEIGHT``, default 0.1,
re-measured on the sample and the GitHub dev set on 1 Dec: docs/retrieval-eval.md).

The ``score`` shown with each hit (and compared with ``min_score``) follows the
ranking, so a list never shows a lower-ranked hit with a higher score: the
fused value clipped to [0, 1] (the cosine plus at most ``LEXICAL_WEIGHT`` for
the query's best BM25 match and at most ``coverage_weight`` for holding every
term of the question), times ``SUPERSEDED_PENALTY`` for a superseded
document. In lexical mode it is ``bm25 / (bm25 + LEXICAL_HALF)``, which orders
rows like the ranking's ``bm25 / max`` without giving every query's best row 1.0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from assistant.types import DocMeta

__all__ = [
    "LEXICAL_HALF",
    "LEXICAL_WEIGHT",
    "RRF_K",
    "demote_superseded",
    "fuse_scores",
    "reciprocal_rank_fusion",
    "relevance",
    "superseded_by",
    "top_rows",
]

RRF_K = 60
LEXICAL_WEIGHT = 0.1
LEXICAL_HALF = 8.0
# RRF values near the top differ by ~1/3600 per rank, so 0.95 costs a few places, no more.
SUPERSEDED_PENALTY = 0.95


def top_rows(scores: npt.NDArray[np.float32], n: int, *, positive_only: bool = False) -> list[int]:
    """Return the indices of the ``n`` highest scores, best first (ties by index).

    Args:
        scores: One score per row; ``-inf`` rows are never returned.
        n: How many rows at most.
        positive_only: Drop rows scoring 0 or less (BM25 rows with no term).
    """
    if n <= 0 or scores.size == 0:
        return []
    n = min(n, scores.size)
    part = np.argpartition(-scores, n - 1)[:n] if n < scores.size else np.arange(scores.size)
    ordered = part[np.lexsort((part, -scores[part]))]
    floor = 0.0 if positive_only else -np.inf
    return [int(i) for i in ordered if scores[i] > floor]


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[int]], *, k: int = RRF_K
) -> list[tuple[int, float]]:
    """Fuse ranked row lists into one, best first.

    Args:
        rankings: Each a list of rows, best first.
        k: The RRF constant; larger flattens the advantage of top ranks.

    Returns:
        ``(row, fused value)`` pairs sorted by value (ties: the earlier ranking's order).
    """
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, row in enumerate(ranking, start=1):
            fused[row] = fused.get(row, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda item: -item[1])


def fuse_scores(
    rows: Sequence[int],
    *,
    dense: npt.NDArray[np.float32] | None,
    lexical: npt.NDArray[np.float32] | None,
    lexical_weight: float = LEXICAL_WEIGHT,
    coverage: npt.NDArray[np.float32] | None = None,
    coverage_weight: float = 0.0,
) -> list[tuple[int, float]]:
    """Fuse candidate rows by ``cosine + lexical_weight * bm25 / max(bm25)``, best first.

    With only one retriever, its own score orders the rows (BM25 normalised to [0, 1]).
    In hybrid search a row also gets ``coverage_weight * coverage**2``: BM25 adds up
    its terms, so a row repeating one rare word of the question can beat the row
    holding all of them; the square rewards rows that hold most of the question
    (a soft AND) and gives little for one word in three. Measured on both eval sets
    (docs/retrieval-eval.md, 1 Dec, second session).

    Args:
        rows: The candidate rows (the union of both retrievers' top lists).
        dense: Cosine per row of the snapshot, or None in lexical mode.
        lexical: BM25 per row of the snapshot, or None in dense mode.
        lexical_weight: The weight of normalised BM25 next to the cosine.
        coverage: Per row, the IDF-weighted share of the question's terms it holds
            (`assistant.retrieval.lexical.coverage`), or None.
        coverage_weight: The weight of the squared share (hybrid only).

    Returns:
        ``(row, fused value)`` pairs, best first (ties by row order given).
    """
    top = float(lexical.max()) if lexical is not None and lexical.size else 0.0
    weight = lexical_weight if dense is not None else 1.0
    shares = coverage if dense is not None and lexical is not None and coverage_weight else None
    fused = []
    for row in rows:
        value = float(dense[row]) if dense is not None else 0.0
        if lexical is not None and top > 0:
            value += weight * float(lexical[row]) / top
        if shares is not None:
            value += coverage_weight * float(shares[row]) ** 2
        fused.append((row, value))
    return sorted(fused, key=lambda item: -item[1])


def relevance(
    *, fused: float, dense: float | None, lexical: float | None, superseded: bool = False
) -> float:
    """Return a hit's score in [0, 1], in the ranking's order (see the module docstring).

    Args:
        fused: The row's value from `fuse_scores`.
        dense: The cosine similarity, or None when the dense retriever did not run.
        lexical: The BM25 score, or None when the lexical retriever did not run.
        superseded: Whether a newer version of the row's document exists.
    """
    if dense is None:
        value = 0.0 if lexical is None or lexical <= 0 else lexical / (lexical + LEXICAL_HALF)
    else:
        value = min(1.0, max(0.0, fused))
    return value * (SUPERSEDED_PENALTY if superseded else 1.0)


def superseded_by(docs: Mapping[str, DocMeta]) -> dict[str, frozenset[str]]:
    """Map each superseded source to the sources that replace it.

    A document replaces another when its ``supersedes`` names that document's
    source (or, failing that, its title), or when both share a title
    (case-insensitive) and its ``effective_date`` is later.
    """
    by_title: dict[str, list[str]] = {}
    for source, meta in docs.items():
        by_title.setdefault(meta.title.strip().casefold(), []).append(source)
    result: dict[str, set[str]] = {}
    for source, meta in docs.items():
        target = meta.supersedes.strip()
        if not target:
            continue
        olds = [target] if target in docs else by_title.get(target.casefold(), [])
        for old in olds:
            if old != source:
                result.setdefault(old, set()).add(source)
    for sources in by_title.values():
        dated = [s for s in sources if docs[s].effective_date]
        for old in dated:
            for new in dated:
                if docs[new].effective_date > docs[old].effective_date:
                    result.setdefault(old, set()).add(new)
    return {old: frozenset(news) for old, news in result.items()}


def demote_superseded(
    fused: Sequence[tuple[int, float]],
    *,
    source_of: Callable[[int], str],
    replaced_by: Mapping[str, frozenset[str]],
) -> list[int]:
    """Order rows by fused value with superseded rows penalised and never above their successors.

    A superseded row's fused value is multiplied by ``SUPERSEDED_PENALTY``; then
    any superseded row still ranked above a row of a document that replaces it
    is moved to just after that document's last row.

    Returns:
        Rows, best first.
    """
    penalised = sorted(
        fused,
        key=lambda item: (
            -item[1] * (SUPERSEDED_PENALTY if source_of(item[0]) in replaced_by else 1)
        ),
    )
    order = [row for row, _ in penalised]
    # Bounded so that a cycle (A supersedes B supersedes A) cannot loop forever.
    for _ in range(len(order) ** 2):
        if not _move_one_below_successor(order, source_of=source_of, replaced_by=replaced_by):
            break
    return order


def _move_one_below_successor(
    order: list[int],
    *,
    source_of: Callable[[int], str],
    replaced_by: Mapping[str, frozenset[str]],
) -> bool:
    for i, row in enumerate(order):
        successors = replaced_by.get(source_of(row))
        if not successors:
            continue
        later = [j for j in range(i + 1, len(order)) if source_of(order[j]) in successors]
        if later:
            order.insert(later[-1] + 1, row)
            del order[i]
            return True
    return False
