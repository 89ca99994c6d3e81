import io
import json
from pathlib import Path

import pytest

from assistant.cli.search import main
from assistant.config import Settings
from assistant.protocols import Searcher
from tests.retrieval_helpers import FakeEmbedder, make_retriever, make_snapshot, policy_corpus

CHUNK_KEYS = {"rank", "score", "chunk_id", "text", "source", "heading_path", "page", "section_text"}


def factory(seen: list[Settings]) -> "object":
    embedder = FakeEmbedder()
    chunks, docs = policy_corpus()
    snapshot = make_snapshot(chunks, docs, embedder=embedder)

    def build(settings: Settings) -> Searcher:
        seen.append(settings)
        return make_retriever(
            snapshot,
            embedder,
            top_k=settings.retrieval.top_k,
            mode=settings.retrieval.mode,
            min_score=settings.retrieval.min_score,
        )

    return build


def run(
    argv: list[str], stdin: str = "", env: dict[str, str] | None = None
) -> tuple[int, str, str, list[Settings]]:
    out, err, seen = io.StringIO(), io.StringIO(), []  # type: ignore[var-annotated]
    code = main(
        argv,
        environ=env or {},
        stdin=io.StringIO(stdin),
        stdout=out,
        stderr=err,
        searcher_factory=factory(seen),  # type: ignore[arg-type]
    )
    return code, out.getvalue(), err.getvalue(), seen


def test_json_mode_answers_each_line_with_the_contract_keys() -> None:
    lines = (
        '{"id": "q1", "question": "What does CR-47 cover?"}\n'
        "\n"
        '{"id": 7, "question": "office hours"}\n'
    )
    code, out, _, seen = run(["search", "--json", "-k", "2"], stdin=lines)
    assert code == 0
    assert len(seen) == 1  # one searcher (one model load) for all questions
    answers = [json.loads(line) for line in out.splitlines()]
    assert [a["id"] for a in answers] == ["q1", 7]
    for answer in answers:
        assert set(answer) == {"id", "chunks", "no_good_match"}
        assert len(answer["chunks"]) == 2
        assert all(set(chunk) == CHUNK_KEYS for chunk in answer["chunks"])
    first = answers[0]["chunks"][0]
    assert first["source"] == "finance/fees.md"
    assert first["heading_path"] == "Fees > Card replacement"
    assert first["rank"] == 1
    assert first["page"] is None
    assert "CR-47" in first["text"]
    assert "CR-47" in first["section_text"]


def test_json_mode_reports_a_bad_line_and_carries_on() -> None:
    code, out, _, _ = run(
        ["search", "--json"], stdin='not json\n{"id": 2, "question": "parking"}\n'
    )
    bad, good = (json.loads(line) for line in out.splitlines())
    assert code == 0
    assert "error" in bad
    assert good["id"] == 2


def test_text_mode_prints_rank_score_source_heading_and_snippet() -> None:
    code, out, _, _ = run(["search", "Can I be reimbursed for a cancelled journey?", "-k", "1"])
    assert code == 0
    assert out.splitlines()[0].startswith("1. 0.")
    assert "finance/expenses.md" in out.splitlines()[0]
    assert out.splitlines()[1].strip() == "Expenses > Refund of trip costs"
    assert "A refund of trip costs" in out
    assert out.splitlines()[-1] == "No indexed document uses “journey”."


def test_flags_and_environment_reach_the_settings(tmp_path: Path) -> None:
    env = {"ASSISTANT_TOP_K": "3", "ASSISTANT_MIN_SCORE": "0.2"}
    _, _, _, seen = run(["search", "x", "--index", str(tmp_path), "--mode", "lexical"], env=env)
    (settings,) = seen
    assert settings.store.path == tmp_path
    assert (settings.retrieval.top_k, settings.retrieval.mode, settings.retrieval.min_score) == (
        3,
        "lexical",
        0.2,
    )


def test_filters_restrict_results() -> None:
    _, out, _, _ = run(
        ["search", "--json", "--tag", "hr", "-k", "10"], stdin='{"id": 1, "question": "fees"}\n'
    )
    sources = {c["source"] for c in json.loads(out)["chunks"]}
    assert sources <= {"hr/general.md", "hr/tax.md"}


def test_off_topic_question_says_no_good_match() -> None:
    code, out, _, _ = run(["search", "quantum chromodynamics", "--min-score", "0.3"])
    assert code == 0
    assert out.startswith("No good match")
    assert "No indexed document uses “quantum” or “chromodynamics”." in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["search", "x", "--date-from", "31/01/2024"], "--date-from must be a date"),
        (["search", "x", "-k", "0"], "top_k must be at least 1"),
        (["search"], "give a question"),
        (["eval", "/nonexistent/questions.jsonl"], "cannot read questions file"),
    ],
)
def test_usage_errors_exit_2_with_a_message(argv: list[str], message: str) -> None:
    code, _, err, _ = run(argv)
    assert code == 2
    assert message in err


def test_unknown_flag_exits_2() -> None:
    assert run(["search", "x", "--bogus"])[0] == 2


def test_eval_command_prints_figures(tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps(
            {
                "id": "a",
                "question": "What does CR-47 cover?",
                "kind": "fact",
                "gold": [
                    {"file": "finance/fees.md", "heading_path": "", "must_contain": "charge  cr-47"}
                ],
            }
        )
        + "\n"
        + json.dumps(
            {"id": "b", "question": "quantum chromodynamics", "kind": "unanswerable", "gold": []}
        )
        + "\n"
    )
    code, out, _, _ = run(["eval", str(questions), "--json", "--min-score", "0.3"])
    assert code == 0
    report = json.loads(out)
    assert report["overall"]["recall@1"] == 1.0
    assert report["overall"]["unanswerable_flagged"] == 1.0
    assert report["overall"]["false_no_good_match"] == 0.0
    assert set(report["by_kind"]) == {"fact", "unanswerable"}
