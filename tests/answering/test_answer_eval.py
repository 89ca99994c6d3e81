"""``eval --answers``: scoring what an answer shows, the cosine baseline, and the report."""

import json
from pathlib import Path

import pytest

from assistant.answering.baseline import baseline_answer, sentences
from assistant.answering.evaluation import (
    AnswerOutcome,
    AnswerReport,
    GivenAnswer,
    figures_of,
    normalise_answer,
    says_not_covered,
    score_answer,
    word_count,
)
from assistant.answering.evaluation_report import format_answer_reports, format_misses
from assistant.retrieval.evaluation import load_questions
from assistant.types import Chunk, EvalQuestion, GoldEntry, Hit
from tests.support.cli_index import CountingEmbedder, build_index, run_cli

GOLD = GoldEntry("loans.md", "", "12% per annum on a reducing balance")
RATE = EvalQuestion(
    "e1",
    "What interest do emergency loans carry?",
    "fact",
    (GOLD,),
    answer="Emergency loans carry 12% per annum, up to KES 3,000,000.",
)
UNANSWERABLE = EvalQuestion("u1", "Can I bring my dog?", "unanswerable", ())


def hit(source: str, body: str, rank: int = 1, section: str = "") -> Hit:
    chunk = Chunk(
        chunk_id=f"{source}#{rank}",
        source=source,
        ordinal=rank,
        heading_path=("Loan Policy", "Emergency Loans"),
        anchor="",
        text="Loan Policy > Emergency Loans\n\n" + body,
        body=body,
        prefix="",
        char_start=0,
        char_end=len(body),
        start_line=1,
        end_line=1,
        section_start=0,
        section_end=len(body),
        page=0,
        token_count=len(body.split()),
    )
    return Hit(chunk=chunk, rank=rank, score=0.9, title="Loan Policy", section_text=section)


HITS = (hit("loans.md", "Emergency loans carry interest at 12% per annum on a reducing balance."),)


def score(
    question: EvalQuestion,
    text: str,
    *,
    mode: str = "extractive",
    cited: tuple[str, ...] = ("loans.md",),
) -> AnswerOutcome:
    return score_answer(question, GivenAnswer(text, mode, cited), hits=HITS)


def test_markers_and_markdown_are_stripped_before_looking_for_the_phrase() -> None:
    text = (
        "**Emergency loans** carry [12% per annum](https://x.example/12) on a _reducing_ [1] "
        "balance."
    )
    assert normalise_answer(text) == "emergency loans carry 12% per annum on a reducing balance."
    outcome = score(RATE, "> Interest: `12%  per\nannum` on a\\* *reducing balance* [1][2]")
    assert outcome.gold_phrase
    assert not score(RATE, "Interest is 12% per year on a reducing balance [1].").gold_phrase


def test_every_reference_figure_must_appear_in_any_notation() -> None:
    assert figures_of("KES 3,000,000 at 12 percent from 8:00 on 2025-01-31, [4]") == (
        "3000000",
        "12%",
        "8:00",
        "2025-01-31",
    )
    full = score(RATE, "At 12% per annum [1], loans go up to KES 3000000 [1].")
    assert (full.reference_figures, full.missing_figures) == (("12%", "3000000"), ())
    partial = score(RATE, "At 12 per cent [1], up to 3 million.")
    assert partial.missing_figures == ("3000000",)
    one_day = EvalQuestion("e3", "How fast?", "fact", (GOLD,), answer="Within 1 working day.")
    assert score(one_day, "Quickly [1].").missing_figures == ("1",)  # a marker is no figure
    assert score(RATE, "Twelve percent [1].").missing_figures == ("12%", "3000000")


def test_cited_gold_file_and_length_in_words() -> None:
    assert score(RATE, "12% [1].", cited=("other.md", "loans.md")).cited_gold_file
    assert not score(RATE, "12% [1].", cited=("other.md",)).cited_gold_file
    assert word_count("**Loans** of KES 3,000,000 [1] don't - wait [2].") == 6


@pytest.mark.parametrize(
    ("text", "mode", "refused"),
    [
        ("The policy documents do not appear to cover this question.", "no good match", True),
        ("Anything at all.", "no good match", True),
        ("The provided sources don't mention dogs.", "model", True),
        (
            "Extracted passages (no language model configured):\n\nNo passage of the "
            "retrieved sections matches the question's words; see the sources below.",
            "extractive",
            True,
        ),
        ("This policy does not cover contractors [1].", "model", False),
        (
            "Note: the policy documents never use the word “dog”. Pets are fine [1].",
            "extractive",
            False,
        ),
    ],
)
def test_a_refusal_is_the_no_match_mode_or_a_not_covered_opening(
    text: str, mode: str, refused: bool
) -> None:
    assert says_not_covered(text, mode=mode) is refused


def test_report_counts_refusals_per_kind_and_overall() -> None:
    answered = score(RATE, "Emergency loans carry 12% per annum on a reducing balance [1].")
    wrongly_refused = score(
        RATE, "The policy documents do not appear to cover this question.", mode="no good match"
    )
    flagged = score(UNANSWERABLE, "The sources do not say.", mode="model", cited=())
    missed = score(UNANSWERABLE, "Dogs are welcome [1].", mode="model")
    report = AnswerReport("assistant", (answered, wrongly_refused, flagged, missed))
    assert not wrongly_refused.gold_phrase  # a refusal scores no phrase even if it lists sections
    figures = report.figures()
    assert figures["gold_phrase"] == 0.5
    assert figures["refused_answerable"] == 0.5
    assert figures["unanswerable_flagged"] == 0.5
    assert figures["gold_top5"] == 1.0
    assert figures["gold_phrase_top5"] == 0.5
    assert figures["figures"] == 0.0  # answered lacks "3,000,000", the refusal lacks both
    assert report.figures("fact")["refused_answerable"] == 0.5
    assert "refused_answerable" not in report.figures("unanswerable")
    assert [o.question.id for o in report.misses()] == ["e1", "e1", "u1"]
    assert missed.failures() == ("not flagged",)
    misses = format_misses(report)
    assert "e1 [fact, no good match] refused; gold phrase; figures (missing 12%, 3000000)" in misses
    assert "  gold: '12% per annum on a reducing balance' in loans.md" in misses
    assert "    Dogs are welcome [1]." in misses


def test_two_reports_print_side_by_side() -> None:
    good = score(RATE, "12% per annum on a reducing balance, KES 3,000,000 [1].")
    bad = score(RATE, "Loans exist [1].")
    table = format_answer_reports(
        [AnswerReport("assistant", (good,)), AnswerReport("baseline", (bad,))]
    )
    header, overall, *rows = table.splitlines()
    assert header.split() == ["assistant", "baseline"]
    assert overall.startswith("all: 1 answerable (1 with figures, 1 gold in top 5)")
    assert rows[0].split()[-2:] == ["1.000", "0.000"]
    assert rows[0].strip().startswith("gold phrase")


def test_baseline_quotes_the_three_closest_sentences_with_one_embedding_call() -> None:
    section = (
        "# Emergency Loans\n\nEmergency loans carry interest at 12% per annum\n"
        "on a reducing balance. Emergency loans are approved within one day.\n\n"
        "- A member may hold one emergency loan.\n- Loans need a guarantor here.\n\nShort one.\n\n"
        "| Loan | Rate |\n|---|---|\n| Emergency | 12% p.a. reducing |"
    )
    assert sentences(section) == [
        "Emergency loans carry interest at 12% per annum on a reducing balance.",
        "Emergency loans are approved within one day.",
        "- A member may hold one emergency loan.",
        "- Loans need a guarantor here.",
        "| Loan | Rate |",
        "| Emergency | 12% p.a. reducing |",
    ]
    hits = (
        hit("loans.md", "ignored body", rank=1, section=section),
        hit("other.md", "Office hours are nine to five on weekdays.", rank=2),
    )
    embedder = CountingEmbedder()
    text = baseline_answer("emergency loans interest per annum", hits, embedder=embedder)
    assert embedder.calls == 1
    quoted = text.split(" [1]")
    assert quoted[0] == "Emergency loans carry interest at 12% per annum on a reducing balance."
    assert text.count("[") == 3
    assert "Office hours" not in text


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_index(tmp_path_factory.mktemp("answer-eval"))


def write_questions(path: Path) -> Path:
    lines = [
        {
            "id": "e1",
            "question": "What interest do emergency loans carry?",
            "kind": "fact",
            "gold": [{"file": "loans.md", "heading_path": "", "must_contain": GOLD.must_contain}],
            "answer": "Emergency loans carry 12% per annum.",
        },
        {
            "id": "e2",
            "question": "How many days of annual leave do staff receive?",
            "kind": "fact",
            "gold": [{"file": "leave.md", "heading_path": "", "must_contain": "21 days of annual"}],
            "answer": "Staff receive 21 days of annual leave.",
        },
        {
            "id": "u1",
            "question": "quantum chromodynamics lattice",
            "kind": "unanswerable",
            "gold": [],
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_questions_load_their_reference_answer(tmp_path: Path) -> None:
    first, _, unanswerable = load_questions(write_questions(tmp_path / "q.jsonl"))
    assert first.answer == "Emergency loans carry 12% per annum."
    assert unanswerable.answer == ""


def test_eval_answers_both_scores_the_assistant_and_the_baseline(
    index: Path, tmp_path: Path
) -> None:
    questions = write_questions(tmp_path / "q.jsonl")
    argv = ["eval", str(questions), "--answers", "--answer-mode", "both", "--index", str(index)]
    ran = run_cli([*argv, "--json"])
    assert ran.code == 0, ran.err
    report = json.loads(ran.out)
    assert set(report) == {"assistant", "baseline"}
    baseline = {q["id"]: q for q in report["baseline"]["questions"]}
    assert baseline["e1"]["gold_phrase"]
    assert baseline["e2"]["gold_phrase"]
    assert baseline["e1"]["answer"].count("[") == 3
    assert report["baseline"]["overall"]["cited_gold_file"] == 1.0
    for name in ("assistant", "baseline"):
        assert report[name]["overall"]["unanswerable_flagged"] == 1.0
        assert report[name]["counts"] == {
            "answerable": 2,
            "unanswerable": 1,
            "with_figures": 2,
            "gold_top5": 2,
        }
    readable = run_cli([*argv, "--misses"])
    assert readable.code == 0
    assert readable.out.splitlines()[0].split() == ["assistant", "baseline"]
    assert "misses of assistant:" in readable.out
    assert "misses of baseline: 0 of 3" in readable.out


def test_eval_answers_baseline_alone(index: Path, tmp_path: Path) -> None:
    questions = write_questions(tmp_path / "q.jsonl")
    ran = run_cli(
        ["eval", str(questions), "--answers", "--answer-mode", "baseline", "--index", str(index)]
    )
    assert ran.code == 0, ran.err
    assert ran.out.splitlines()[0].split() == ["baseline"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--answer-mode", "both"], "--answer-mode and --misses go with --answers"),
        (["--answers", "--sweep", "k=3"], "cannot be combined"),
    ],
)
def test_answer_options_need_answers(tmp_path: Path, extra: list[str], message: str) -> None:
    ran = run_cli(["eval", str(write_questions(tmp_path / "q.jsonl")), *extra])
    assert ran.code == 2
    assert message in ran.err


def test_a_hedged_answer_is_scored_as_an_answer_and_catches_an_unanswerable_question() -> None:
    hedged = GivenAnswer(
        "Extracted passages (no language model configured):\n\nThe policies may not answer "
        "this exactly. The closest passage says:\n\n> Staff get 25 days. [1]",
        "extractive",
        (),
    )
    unanswerable = EvalQuestion("u1", "How many days on Mars?", "unanswerable", ())
    outcome = score_answer(unanswerable, hedged, hits=())
    assert outcome.hedged
    assert not outcome.refused
    assert outcome.failures() == ()
    figures = AnswerReport("assistant", (outcome,)).figures()
    assert (figures["unanswerable_flagged"], figures["unanswerable_caught"]) == (0.0, 1.0)
