from pathlib import Path

import pytest

from assistant.errors import ConfigError
from assistant.retrieval.evaluation import (
    EvalQuestion,
    EvalReport,
    GoldEntry,
    QuestionResult,
    format_report,
    found_ranks,
    load_questions,
)
from assistant.types import Hit
from tests.retrieval_helpers import Section, build_document

CHUNKS = build_document(
    "a.md",
    "A",
    [Section("One", ("Fee is  KES 500\nper month.",)), Section("Two", ("Leave is 21 days.",))],
)


def hit(rank: int, index: int) -> Hit:
    return Hit(chunk=CHUNKS[index], rank=rank, score=0.5, title="A")


def test_gold_is_found_by_file_and_normalised_text() -> None:
    gold = (
        GoldEntry("a.md", "", "fee is kes 500 PER month"),
        GoldEntry("a.md", "", "21 days"),
        GoldEntry("b.md", "", "21 days"),
    )
    assert found_ranks(gold, [hit(1, 1), hit(2, 0)]) == (2, 1, 0)


def result(
    ranks: tuple[int, ...], *, flagged: bool, best: float, gold: bool = True
) -> QuestionResult:
    entries = tuple(GoldEntry("a.md", "", "x") for _ in ranks) if gold else ()
    return QuestionResult(
        EvalQuestion("q", "?", "multi" if gold else "none", entries), ranks, flagged, best
    )


def test_multi_gold_recall_is_the_fraction_found_and_mrr_uses_the_first() -> None:
    r = result((2, 0, 5), flagged=False, best=0.7)
    assert r.recall(1) == 0
    assert r.recall(3) == pytest.approx(1 / 3)
    assert r.recall(5) == pytest.approx(2 / 3)
    assert r.reciprocal_rank() == 0.5


def test_report_figures_and_suggested_floor() -> None:
    report = EvalReport(
        results=(
            result((1,), flagged=False, best=0.7),
            result((0,), flagged=True, best=0.5),
            result((), flagged=True, best=0.3, gold=False),
            result((), flagged=False, best=0.55, gold=False),
        ),
        cutoffs=(1, 3),
    )
    figures = report.figures()
    assert figures["recall@1"] == 0.5
    assert figures["false_no_good_match"] == 0.5
    assert figures["unanswerable_flagged"] == 0.5
    assert report.suggested_min_score() == 0.4  # flags 0.3, keeps 0.5 and 0.7
    assert "suggested min_score: 0.400" in format_report(report)


def test_bad_question_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "a", "question": "x", "gold": []}\n{"id": "b"}\n')
    with pytest.raises(ConfigError, match=r"q.jsonl:2"):
        load_questions(path)


def test_sample_questions_load() -> None:
    questions = load_questions(Path(__file__).parent.parent / "data" / "eval" / "questions.jsonl")
    assert len(questions) >= 50
    assert any(not q.gold for q in questions)


def test_sweep_grid_parses_values_and_keeps_current_settings_for_the_rest() -> None:
    from assistant.cli.evaluate import parse_grid
    from assistant.config import RetrievalSettings, Settings

    current = Settings(retrieval=RetrievalSettings(top_k=7))
    grid = parse_grid(["chunk_tokens=128,256", "mode=dense"], settings=current)
    assert grid == {"chunk_tokens": [128, 256], "overlap": [0.15], "k": [7], "mode": ["dense"]}
    with pytest.raises(ConfigError, match="NAME=V1,V2"):
        parse_grid(["size=1"], settings=Settings())
    with pytest.raises(ConfigError, match="k"):
        parse_grid(["k=three"], settings=Settings())
