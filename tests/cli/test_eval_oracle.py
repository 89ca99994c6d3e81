"""``eval --answers --answer-mode oracle|all``: the command line and JSON contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.answering.test_answer_eval import write_questions
from tests.support.cli_index import build_index, run_cli

ORACLE_FIGURES = {"reached", "right", "intact", "refused_by_gate", "unanswerable_flagged"}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_index(tmp_path_factory.mktemp("eval-oracle"))


def with_follow_up(path: Path) -> Path:
    lines = path.read_text(encoding="utf-8").splitlines()
    second = json.loads(lines[1])
    second["follow_up"] = {"after": json.loads(lines[0])["question"], "question": "and leave?"}
    lines[1] = json.dumps(second)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def eval_argv(questions: Path, index: Path, mode: str) -> list[str]:
    return ["eval", str(questions), "--answers", "--answer-mode", mode, "--index", str(index)]


def test_oracle_json_puts_the_five_figures_under_oracle(index: Path, tmp_path: Path) -> None:
    questions = with_follow_up(write_questions(tmp_path / "q.jsonl"))
    ran = run_cli([*eval_argv(questions, index, "oracle"), "--json"])
    assert ran.code == 0, ran.err
    report = json.loads(ran.out)
    assert set(report) == {"oracle"}
    oracle = report["oracle"]
    assert set(oracle) >= ORACLE_FIGURES
    assert {key: oracle[key] for key in ORACLE_FIGURES} == {
        "reached": 1.0,
        "right": 1.0,
        "intact": 1.0,
        "refused_by_gate": 0.0,
        "unanswerable_flagged": 1.0,
    }
    assert set(oracle["overall"]) >= ORACLE_FIGURES
    assert set(oracle["by_kind"]) == {"fact", "unanswerable", "follow-up"}
    assert set(oracle["by_kind"]["fact"]) >= {"reached", "right", "intact", "refused_by_gate"}
    assert oracle["by_kind"]["unanswerable"]["unanswerable_flagged"] == 1.0
    assert oracle["by_kind"]["follow-up"]["right"] == 1.0
    by_id = {q["id"]: q for q in oracle["questions"]}
    assert set(by_id) == {"e1", "e2", "u1", "e2-follow-up"}
    assert by_id["e1"]["reached"]
    assert by_id["e1"]["asked"]
    assert by_id["e1"]["right"]
    assert by_id["e1"]["mode"] == "model"
    assert by_id["u1"]["mode"] == "no good match"


def test_all_prints_the_three_answerers_side_by_side(index: Path, tmp_path: Path) -> None:
    questions = write_questions(tmp_path / "q.jsonl")
    ran = run_cli([*eval_argv(questions, index, "all"), "--json"])
    assert ran.code == 0, ran.err
    report = json.loads(ran.out)
    assert list(report) == ["assistant", "baseline", "oracle"]
    assert set(report["oracle"]) >= ORACLE_FIGURES
    assert "reached" not in report["assistant"]["overall"]
    # One retrieval run: the index was opened once, for all three answerers.
    assert len(ran.searchers) == 1
    readable = run_cli([*eval_argv(questions, index, "all"), "--misses"])
    assert readable.code == 0, readable.err
    lines = readable.out.splitlines()
    assert lines[0].split() == ["assistant", "baseline", "oracle"]
    reached = next(line for line in lines if line.strip().startswith("reached"))
    assert reached.split()[-2:] == ["-", "1.000"]
    assert "misses of oracle:" in readable.out


def test_oracle_text_report_names_every_figure(index: Path, tmp_path: Path) -> None:
    ran = run_cli(eval_argv(write_questions(tmp_path / "q.jsonl"), index, "oracle"))
    assert ran.code == 0, ran.err
    assert ran.out.splitlines()[0].split() == ["oracle"]
    for label in ("reached", "right", "intact", "refused by gate", "unanswerable flagged"):
        assert label in ran.out


def test_an_unknown_answer_mode_is_a_usage_error(index: Path, tmp_path: Path) -> None:
    ran = run_cli(eval_argv(write_questions(tmp_path / "q.jsonl"), index, "perfect"))
    assert ran.code == 2
