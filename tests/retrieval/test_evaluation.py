import json
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
from tests.support.paths import ROOT
from tests.support.retrieval_helpers import Section, build_document

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
    questions = load_questions(ROOT / "data" / "eval" / "questions.jsonl")
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


def sweep_setup(base: Path) -> tuple[Path, Path]:
    """A two-document corpus and one question about it, for ``eval --sweep``."""
    from tests.support.cli_index import LEAVE, LOANS

    docs = base / "docs"
    docs.mkdir()
    (docs / "loans.md").write_text(LOANS, encoding="utf-8")
    (docs / "leave.md").write_text(LEAVE, encoding="utf-8")
    questions = base / "q.jsonl"
    gold = [{"file": "leave.md", "heading_path": "", "must_contain": "21 days"}]
    questions.write_text(
        json.dumps({"id": "a", "question": "annual leave days", "kind": "fact", "gold": gold})
        + "\n"
    )
    return docs, questions


def test_sweep_writes_a_plot_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.cli_index import run_cli

    docs, questions = sweep_setup(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    argv = ["eval", str(questions), "--sweep", "chunk_tokens=96,128", "--docs", str(docs)]

    plain = run_cli(argv)
    assert plain.code == 0, plain.err
    assert "chunk_tokens" in plain.out
    assert list(work.iterdir()) == []  # no sweep.png left in the current folder
    as_json = run_cli([*argv, "--json"])
    assert as_json.code == 0, as_json.err
    assert len(json.loads(as_json.out)) == 2
    assert list(work.iterdir()) == []

    chart = tmp_path / "charts" / "sweep.png"
    chart.parent.mkdir()
    plotted = run_cli([*argv, "--plot", str(chart)])
    assert plotted.code == 0, plotted.err
    assert f"plot written to {chart}" in plotted.out
    assert chart.read_bytes().startswith(b"\x89PNG")
    assert list(work.iterdir()) == []


def test_plot_without_sweep_is_a_usage_error(tmp_path: Path) -> None:
    from tests.support.cli_index import run_cli

    _, questions = sweep_setup(tmp_path)
    ran = run_cli(["eval", str(questions), "--plot", str(tmp_path / "x.png")])
    assert ran.code == 2
    assert "--plot goes with --sweep" in ran.err
    assert not (tmp_path / "x.png").exists()


def test_sweep_chart_shows_recall_and_mrr_on_a_readable_axis() -> None:
    from assistant.cli.evaluate import SweepRow, sweep_figure

    def row(tokens: int, recall: float, mrr: float) -> SweepRow:
        return SweepRow(tokens, 0.15, "hybrid", 5, 100, recall, mrr, 1.0, 0.0, 0.1)

    figure = sweep_figure([row(128, 0.92, 0.81), row(200, 0.96, 0.84)])
    recall, mrr = figure.axes
    for axes, name, shown in ((recall, "recall@k", (0.92, 0.96)), (mrr, "MRR@10", (0.81, 0.84))):
        assert axes.get_ylabel() == f"{name} (higher is better)"
        assert axes.get_xlabel() == "chunking: tokens per chunk, overlap"
        assert [t.get_text() for t in axes.get_xticklabels()] == [
            "128 tok\n0.15 ov",
            "200 tok\n0.15 ov",
        ]
        low, high = axes.get_ylim()
        assert low < min(shown)
        assert high > max(shown)
        # The gap spans at least half the axis (on a 0-1 axis it would be 3-4%).
        assert (max(shown) - min(shown)) / (high - low) > 0.5
    legends = [axes.get_legend() for axes in (recall, mrr)]
    assert [[t.get_text() for t in legend.get_texts()] for legend in legends if legend] == [
        ["hybrid @5"],
        ["hybrid"],
    ]
