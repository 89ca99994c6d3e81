import io
import json
from pathlib import Path

import pytest

from assistant.cli._filters import problem_error
from assistant.cli.search import main
from assistant.config import Settings
from assistant.errors import IndexNotFoundError
from assistant.protocols import Searcher
from assistant.session import Problem
from assistant.session.filters import resolve_source
from tests.support.retrieval_helpers import (
    FakeEmbedder,
    make_retriever,
    make_snapshot,
    policy_corpus,
)

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


@pytest.mark.parametrize("typed", ["fees.md", "fees", "FINANCE/Fees.md", "finance/fees.md"])
def test_source_as_a_user_types_it_matches_the_stored_path(typed: str) -> None:
    code, out, err, _ = run(
        ["search", "--json", "--source", typed, "-k", "10"], stdin='{"id": 1, "question": "fees"}\n'
    )
    assert code == 0, err
    chunks = json.loads(out)["chunks"]
    assert chunks
    assert {c["source"] for c in chunks} == {"finance/fees.md"}


def test_tag_in_another_case_matches_the_stored_tag() -> None:
    code, out, err, _ = run(["search", "fees", "--tag", "HR", "-k", "10"])
    assert code == 0, err
    assert "hr/" in out
    assert "finance/fees.md" not in out


@pytest.mark.parametrize(
    ("flag", "typed", "message"),
    [
        (
            "--source",
            "feez.md",
            "no document 'feez.md' in the index; did you mean 'finance/fees.md'?",
        ),
        ("--tag", "travl", "no tag 'travl' in the index; did you mean 'travel'?"),
        # Nothing close: the error says what the index holds.
        (
            "--source",
            "zzz.pdf",
            "the index has 4 documents: 'finance/expenses.md', 'finance/fees.md', "
            "'hr/general.md', 'hr/tax.md'",
        ),
        ("--tag", "qqq", "the index has 3 tags: 'finance', 'hr', 'travel'"),
    ],
)
def test_unknown_source_or_tag_is_a_usage_error_with_suggestions(
    flag: str, typed: str, message: str
) -> None:
    for argv in (["search", "fees", flag, typed], ["search", "--json", flag, typed]):
        code, out, err, _ = run(argv, stdin='{"id": 1, "question": "fees"}\n')
        assert (code, out) == (2, "")
        assert message in err
        assert "No results" not in err


def test_a_name_that_fits_several_sources_says_which() -> None:
    several = resolve_source("leave.md", ["a/leave.md", "b/leave.md", "c/loans.md"])
    assert several == Problem(
        "ambiguous filter", field="source", value="leave.md", close=("a/leave.md", "b/leave.md")
    )
    assert "fits several documents: 'a/leave.md', 'b/leave.md'" in str(problem_error(several))
    assert resolve_source("b/leave.md", ["a/leave.md", "b/leave.md"]) == "b/leave.md"
    # A path end must start at a "/": "ave.md" is not "leave.md".
    unknown = resolve_source("ave.md", ["a/leave.md"])
    assert isinstance(unknown, Problem)
    assert "no document" in str(problem_error(unknown))


def test_json_error_lines_keep_the_request_id() -> None:
    lines = (
        '{"id": "q1"}\n'  # no question at all
        '{"id": "q2", "q": "fees"}\n'
        '["q3", "fees"]\n'  # not an object: no id to keep
        '{"id": "q4", "question": "fees"}\n'
    )
    code, out, _, _ = run(["search", "--json"], stdin=lines)
    answers = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [a["id"] for a in answers] == ["q1", "q2", None, "q4"]
    assert all("question must be a non-empty string" in a["error"] for a in answers[:2])
    assert answers[2]["error"] == "bad request line: not a JSON object"
    assert answers[3]["chunks"]


def test_a_failing_search_is_an_error_line_with_its_id() -> None:
    class NoIndex:
        def search(self, question: str, **kwargs: object) -> object:
            raise IndexNotFoundError("no index at idx: run `python ingest.py` first")

    out = io.StringIO()
    code = main(
        ["search", "--json"],
        environ={},
        stdin=io.StringIO('{"id": "a", "question": "x"}\n{"id": "b", "question": "y"}\n'),
        stdout=out,
        stderr=io.StringIO(),
        searcher_factory=lambda _settings: NoIndex(),  # type: ignore[arg-type,return-value]
    )
    assert code == 0
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [
        {"id": "a", "error": "no index at idx: run `python ingest.py` first"},
        {"id": "b", "error": "no index at idx: run `python ingest.py` first"},
    ]


def test_json_output_escapes_c1_controls_and_keeps_other_text_readable() -> None:
    question_id = "q\x9b2J\x85-\u2028-\u202e-é"  # CSI, NEL, line separator, bidi override
    code, out, _, _ = run(
        ["search", "--json"], stdin=json.dumps({"id": question_id, "question": "fees"}) + "\n"
    )
    assert code == 0
    assert out.isascii() is False  # é stays readable
    assert "é" in out
    for raw in ("\x9b", "\x85", "\u2028", "\u202e"):
        assert raw not in out
    assert "\\u009b2J\\u0085-\\u2028-\\u202e" in out
    assert json.loads(out)["id"] == question_id
