"""``eval --answers --answer-mode model|model-compare|oracle-uncited``: the real-model figures."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.answering.test_answer_eval import write_questions
from tests.cli.test_eval_oracle import eval_argv
from tests.support.cli_index import build_index, run_cli
from tests.support.openai_server import FakeOpenAIServer, Reply

MODEL_FIGURES = {
    "right",
    "cited_right",
    "cites_gold",
    "invented",
    "refused_answerable",
    "unanswerable_flagged",
    "first_token_ms",
    "total_ms",
}
# What a small local model writes: the right facts, never a marker.
REPLIES = {
    "What interest do emergency loans carry?": "Emergency loans carry 12% per annum.",
    "How many days of annual leave do staff receive?": "Staff receive 21 days of annual leave.",
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_index(tmp_path_factory.mktemp("eval-model"))


def never_cites(body: dict[str, Any]) -> Reply:
    asked = str(body["messages"][-1]["content"])
    reply = next((r for q, r in REPLIES.items() if f"Question: {q}" in asked), "")
    return Reply(text=reply or "The policy documents do not cover this.")


@pytest.fixture
def model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(handler=never_cites) as server:
        yield server


@pytest.mark.slow
def test_model_compare_shows_what_citing_claim_by_claim_changes(
    index: Path, tmp_path: Path, model: FakeOpenAIServer
) -> None:
    questions = write_questions(tmp_path / "q.jsonl")
    env = {"ASSISTANT_LLM_BASE_URL": model.base_url, "ASSISTANT_LLM_API_KEY": "test"}
    ran = run_cli([*eval_argv(questions, index, "model-compare"), "--json"], env=env)
    assert ran.code == 0, ran.err
    report = json.loads(ran.out)
    assert list(report) == ["model-raw", "model"]
    raw, cited = report["model-raw"], report["model"]
    assert set(cited) >= MODEL_FIGURES
    assert (raw["right"], raw["cited_right"], raw["cites_gold"]) == (1.0, 0.0, 0.0)
    assert (cited["right"], cited["cited_right"], cited["cites_gold"]) == (1.0, 1.0, 1.0)
    assert cited["invented"] == 0.0
    assert cited["unanswerable_flagged"] == 1.0
    assert 0 < cited["first_token_ms"] <= cited["total_ms"]
    by_id = {q["id"]: q for q in cited["questions"]}
    assert set(by_id["e1"]) >= MODEL_FIGURES
    assert "[" in by_id["e1"]["answer"]
    assert "[" not in {q["id"]: q for q in raw["questions"]}["e1"]["answer"]
    assert by_id["u1"]["unanswerable_flagged"]
    readable = run_cli([*eval_argv(questions, index, "model-compare")], env=env)
    assert readable.code == 0, readable.err
    line = next(x for x in readable.out.splitlines() if x.strip().startswith("cited right"))
    assert line.split()[-2:] == ["0.000", "1.000"]


def test_model_without_a_configured_model_says_what_to_set(index: Path, tmp_path: Path) -> None:
    questions = write_questions(tmp_path / "q.jsonl")
    ran = run_cli(eval_argv(questions, index, "model"))
    assert ran.code != 0
    assert "ASSISTANT_LLM_BASE_URL" in ran.err


def test_oracle_uncited_is_cited_by_the_claims_alone(index: Path, tmp_path: Path) -> None:
    questions = write_questions(tmp_path / "q.jsonl")
    ran = run_cli([*eval_argv(questions, index, "oracle-uncited"), "--json"])
    assert ran.code == 0, ran.err
    report = json.loads(ran.out)["oracle-uncited"]
    assert set(report) >= MODEL_FIGURES
    assert (report["right"], report["cites_gold"], report["cited_right"]) == (1.0, 1.0, 1.0)
    assert all("[" in q["answer"] for q in report["questions"] if q["right"])
