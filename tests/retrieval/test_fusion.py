import numpy as np
import pytest

from assistant.retrieval.fusion import (
    demote_superseded,
    fuse_scores,
    reciprocal_rank_fusion,
    relevance,
    superseded_by,
    top_rows,
)
from assistant.types import DocMeta


def test_rrf_rewards_rows_found_by_both_rankings() -> None:
    fused = reciprocal_rank_fusion([[1, 2, 3], [3, 4]])
    assert [row for row, _ in fused] == [3, 1, 2, 4]
    assert fused[0][1] == pytest.approx(1 / 63 + 1 / 61)


def test_top_rows_orders_by_score_and_drops_excluded_rows() -> None:
    scores = np.array([0.1, -np.inf, 0.9, 0.0, 0.9], dtype=np.float32)
    assert top_rows(scores, 3) == [2, 4, 0]
    assert top_rows(scores, 10, positive_only=True) == [2, 4, 0]
    assert top_rows(scores, 10) == [2, 4, 0, 3]


@pytest.mark.parametrize(
    ("fused", "dense", "lexical", "expected"),
    [
        (0.7, 0.7, None, 0.7),
        (-0.2, -0.2, None, 0.0),
        (1.08, 0.98, 20.0, 1.0),
        (0.6, 0.5, 8.0, 0.6),
        (1.0, None, 8.0, 0.5),  # lexical mode: saturated BM25, not bm25 / max
        (0.0, None, 0.0, 0.0),
    ],
)
def test_relevance_is_in_unit_interval(
    fused: float, dense: float | None, lexical: float | None, expected: float
) -> None:
    assert relevance(fused=fused, dense=dense, lexical=lexical) == pytest.approx(expected)


def test_relevance_penalises_a_superseded_version() -> None:
    current = relevance(fused=0.8, dense=0.75, lexical=3.0)
    assert relevance(fused=0.8, dense=0.75, lexical=3.0, superseded=True) < current


def test_superseded_by_title_dates_and_explicit_field() -> None:
    docs = {
        "a-2020.md": DocMeta("Leave", effective_date="2020-01-01"),
        "a-2024.md": DocMeta("leave", effective_date="2024-01-01"),
        "undated.md": DocMeta("Leave"),
        "old-fees.md": DocMeta("Fee table"),
        "fees.md": DocMeta("Fees", supersedes="old-fees.md"),
        "gift.md": DocMeta("Gifts", supersedes="Gift policy"),
        "gift-old.md": DocMeta("Gift policy"),
    }
    assert superseded_by(docs) == {
        "a-2020.md": frozenset({"a-2024.md"}),
        "old-fees.md": frozenset({"fees.md"}),
        "gift-old.md": frozenset({"gift.md"}),
    }


def test_demotion_never_leaves_a_superseded_row_above_its_successor() -> None:
    source = {0: "old.md", 1: "x.md", 2: "new.md", 3: "y.md"}
    order = demote_superseded(
        [(0, 0.9), (1, 0.5), (2, 0.1), (3, 0.05)],
        source_of=source.__getitem__,
        replaced_by={"old.md": frozenset({"new.md"})},
    )
    assert order == [1, 2, 0, 3]


def test_demotion_terminates_on_a_supersession_cycle() -> None:
    source = {0: "a.md", 1: "b.md"}
    order = demote_superseded(
        [(0, 0.9), (1, 0.5)],
        source_of=source.__getitem__,
        replaced_by={"a.md": frozenset({"b.md"}), "b.md": frozenset({"a.md"})},
    )
    assert sorted(order) == [0, 1]


def test_weighted_fusion_adds_normalised_bm25_to_cosine() -> None:
    dense = np.array([0.50, 0.45, 0.10], dtype=np.float32)
    lexical = np.array([0.0, 4.0, 8.0], dtype=np.float32)
    fused = fuse_scores([0, 1, 2], dense=dense, lexical=lexical, lexical_weight=0.1)
    assert [row for row, _ in fused] == [0, 1, 2]
    assert dict(fused)[1] == pytest.approx(0.45 + 0.05)
    assert [row for row, _ in fuse_scores([0, 1, 2], dense=None, lexical=lexical)] == [2, 1, 0]
    assert [row for row, _ in fuse_scores([2, 1], dense=dense, lexical=None)] == [1, 2]


def test_coverage_lifts_the_row_holding_most_of_the_question_in_hybrid_only() -> None:
    dense = np.array([0.5, 0.5], dtype=np.float32)
    lexical = np.array([4.0, 3.6], dtype=np.float32)  # row 0 repeats one term
    coverage = np.array([0.5, 1.0], dtype=np.float32)
    plain = fuse_scores([0, 1], dense=dense, lexical=lexical)
    assert [row for row, _ in plain] == [0, 1]
    fused = fuse_scores(
        [0, 1], dense=dense, lexical=lexical, coverage=coverage, coverage_weight=0.1
    )
    assert [row for row, _ in fused] == [1, 0]
    assert fused[0][1] == pytest.approx(0.5 + 0.1 * 0.9 + 0.1)
    lexical_only = fuse_scores(
        [0, 1], dense=None, lexical=lexical, coverage=coverage, coverage_weight=0.1
    )
    assert [row for row, _ in lexical_only] == [0, 1]
