"""Model answers cannot smuggle in invented facts: flags, warnings, refusals, reasoning."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assistant.answering.citations import check_answer
from assistant.answering.grounding import (
    NO_CITATION_WARNING,
    UNSUPPORTED_MARK,
    figures,
    names,
    says_not_covered,
    ungrounded,
)
from assistant.answering.llm import VisibleText
from assistant.answering.service import NO_MATCH_OPENING
from tests.answering.test_service import HITS, FakeSearcher, online
from tests.support.hit_factory import make_hit
from tests.support.openai_server import FakeOpenAIServer, Reply

LOAN = make_hit(
    1,
    "Emergency Loans carry interest at 12% per annum on a reducing balance, "
    "up to KES 200,000. The Credit Committee approves them.",
    source="loan-policy.md",
    heading_path=("Loan Policy", "Emergency Loans"),
    title="Loan Policy",
)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def test_an_invented_figure_is_flagged_even_without_a_citation() -> None:
    answer = check_answer("What is the rate?", "The emergency loan rate is 12.05%.", (LOAN,))
    assert answer.unsupported_sentences == ("The emergency loan rate is 12.05%.",)
    assert answer.text.startswith(NO_CITATION_WARNING)
    assert "12.05%." + UNSUPPORTED_MARK in answer.text


def test_a_grounded_cited_answer_is_left_alone() -> None:
    text = "Emergency loans carry 12% per annum on a reducing balance [1]."
    answer = check_answer("What is the rate?", text, (LOAN,))
    assert answer.unsupported_sentences == ()
    assert answer.text == text


def test_a_figure_written_with_separators_matches_the_source() -> None:
    evidence = "up to KES 200,000"
    assert not ungrounded("You may borrow KES 200000.", evidence=evidence)
    assert ungrounded("You may borrow KES 250,000.", evidence=evidence)


def test_an_invented_name_is_flagged_and_known_names_are_not() -> None:
    evidence = "The Credit Committee approves Emergency Loans."
    assert ungrounded("Loans are approved by the Board of Trustees.", evidence=evidence)
    assert not ungrounded("Loans are approved by the Credit Committee.", evidence=evidence)
    # A name from the question is the user's, not an invention.
    assert not ungrounded("Yes, Amina may apply.", evidence=evidence, question="Can Amina apply?")


def test_the_first_word_of_a_sentence_is_not_a_name() -> None:
    assert names("Members may borrow. Interest is charged monthly.") == set()
    assert names("- Approval comes from the Treasurer") == {"treasurer"}


def test_grounded_only_withholds_a_flagged_sentence_behind_a_note_where_it_stood() -> None:
    text = (
        "Emergency loans carry 12% per annum on a reducing balance [1]. "
        "The rate is 12.05% per annum. "
        "The Credit Committee approves them [1]."
    )
    answer = check_answer("What is the rate?", text, (LOAN,), grounded_only=True)
    assert "12.05" not in answer.text
    assert answer.text == (
        "Emergency loans carry 12% per annum on a reducing balance [1]. "
        "*(One statement was withheld: its figure is not in the cited sources.)* "
        "The Credit Committee approves them [1]."
    )
    assert answer.unsupported_sentences == ("The rate is 12.05% per annum.",)


def test_when_most_of_the_answer_would_be_withheld_it_is_shown_marked() -> None:
    text = "The rate is 12.05% per annum, set by the Credit Committee. Loans are approved [1]."
    answer = check_answer("What is the rate?", text, (LOAN,), grounded_only=True)
    assert answer.text == (
        "The rate is 12.05% per annum, set by the Credit Committee."
        + UNSUPPORTED_MARK
        + " Loans are approved [1]."
    )
    assert answer.unsupported_sentences == (
        "The rate is 12.05% per annum, set by the Credit Committee.",
    )


@pytest.mark.parametrize(
    ("source", "sentence"),
    [
        ("Members must wait twelve (12) months.", "Members must wait at least 12 months [1]."),
        ("Members must wait one year.", "Members must wait at least 12 months [1]."),
        ("Members must wait twelve months.", "Members must wait at least 12 months [1]."),
        ("The per diem is KES 40,000 per trip.", "The per diem is 40000 shillings per trip [1]."),
        ("The per diem is 40000 shillings.", "The per diem is KES 40,000 [1]."),
        ("Cover is up to KES 3 million per member.", "Cover is up to KES 3,000,000 [1]."),
        ("The rate is 12 percent per annum.", "The rate is 12% per annum [1]."),
        ("The rate is 12% per annum.", "The rate is 12 per cent per annum [1]."),
        ("Claims close on 1 December 2026.", "Claims close on 2026-12-01 [1]."),
        ("Claims close on December 1, 2026.", "Claims close on 01/12/2026 [1]."),
        ("The office closes at 5 p.m. on Fridays.", "The office closes at 17:00 on Fridays [1]."),
        (
            "A cycle lasts 6 weeks. A cooldown of 2 weeks follows it.",
            "Eight weeks: a 6-week cycle followed by a 2-week cooldown, 8 weeks in all [1].",
        ),
        (
            "Leave accrues at 2 days per month, for 12 months.",
            "Leave accrues to 24 days over the 12 months [1].",
        ),
        (
            "Bring these:\n\n- your ID\n- a payslip\n- a bank statement\n",
            "Bring 3 things: your ID, a payslip and a bank statement [1].",
        ),
    ],
)
def test_a_figure_in_another_ordinary_form_keeps_a_correct_answer_whole(
    source: str, sentence: str
) -> None:
    hit = make_hit(1, source)
    answer = check_answer("What does the policy say?", sentence, (hit,), grounded_only=True)
    assert answer.unsupported_sentences == ()
    assert answer.text == sentence


@pytest.mark.parametrize(
    ("source", "sentence"),
    [
        ("The rate is 12% per annum.", "The rate is 12.05 % per annum [1]."),
        ("Members must wait twelve (12) months.", "Members must wait 18 months [1]."),
        ("Claims close on 1 December 2026.", "Claims close on 31 December 2026 [1]."),
        ("The per diem is KES 40,000 per trip.", "The per diem is KES 45,000 per trip [1]."),
    ],
)
def test_a_figure_no_source_states_in_any_form_is_still_caught(source: str, sentence: str) -> None:
    answer = check_answer("What does the policy say?", sentence, (make_hit(1, source),))
    assert answer.unsupported_sentences == (sentence,)


def test_sums_of_figures_count_only_from_the_cited_sources() -> None:
    cycle = make_hit(1, "A cycle lasts 6 weeks. A cooldown of 2 weeks follows it.")
    # Uncited, in an answer that cites nothing: 8 is stated nowhere.
    answer = check_answer("How long?", "It takes 8 weeks.", (cycle,))
    assert answer.unsupported_sentences == ("It takes 8 weeks.",)


@pytest.mark.parametrize(
    "text",
    [
        "The policy documents do not cover this.",
        "I'm sorry, but the provided sources don't mention a canteen.",
        "The sources do not specify how long the canteen is open.",
        "There is no information about parking in the policies.",
        "There is nothing about parking in the sources.",
    ],
)
def test_a_model_refusal_in_any_wording_is_recognised(text: str) -> None:
    assert says_not_covered(text)


@pytest.mark.parametrize(
    "text",
    [
        "Emergency loans carry 12% per annum [1].",
        "Yes. Members who have not repaid a loan cannot take another one [1].",
        "There is nothing to expense: your paycheck includes $50 a month for internet [1].",
        "The sources do not mention a separate limit; the loan is capped at KES 200,000 [1].",
    ],
)
def test_an_answer_is_not_mistaken_for_a_refusal(text: str) -> None:
    assert not says_not_covered(text)


def test_a_model_refusal_gets_the_no_match_experience(server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(text="The policy documents do not cover this."))
    run = online(server, FakeSearcher()).ask("Is there a canteen?")
    "".join(run)
    answer = run.answer()
    assert answer.not_covered
    assert answer.text.startswith(NO_MATCH_OPENING)
    assert HITS[0].chunk.breadcrumb in answer.text  # the closest sections are listed
    assert run.mode == "no good match"


def test_an_uncited_invented_figure_is_flagged_through_the_real_protocol(
    server: FakeOpenAIServer,
) -> None:
    server.enqueue(Reply(text="Members get 30 days of annual leave."))
    run = online(server, FakeSearcher()).ask("How much leave do I get?")
    "".join(run)
    answer = run.answer()
    assert answer.unsupported_sentences == ("Members get 30 days of annual leave.",)
    assert answer.text.startswith(NO_CITATION_WARNING)
    assert run.mode == "model"


def test_reasoning_is_never_shown_or_checked(server: FakeOpenAIServer) -> None:
    server.enqueue(
        Reply(
            text="<think>Maybe 40 days? Ask Bob.</think>Full-time members get 25 days [1].",
            reasoning="The user wants 99 days",
            chunk_chars=4,
        )
    )
    run = online(server, FakeSearcher()).ask("How much leave do I get?")
    shown = "".join(run)
    answer = run.answer()
    for hidden in ("think", "40 days", "Bob", "99"):
        assert hidden not in shown
        assert hidden not in answer.text
    assert answer.unsupported_sentences == ()
    assert answer.text == "Full-time members get 25 days [1]."


@given(
    visible=st.text(alphabet="ab <>/", max_size=20),
    hidden=st.text(alphabet="xy <>", max_size=20),
    cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=6),
)
def test_think_blocks_are_dropped_wherever_the_deltas_split(
    visible: str, hidden: str, cuts: list[int]
) -> None:
    hidden = hidden.replace("</think>", "")
    text = f"<think>{hidden}</think>{visible}"
    if "<think>" in visible:
        return
    bounds = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)], strict=True)]
    stream = VisibleText()
    out = "".join(stream.feed(p) for p in pieces) + stream.finish()
    assert out == visible


def test_figures_ignore_thousands_separators_but_keep_decimals() -> None:
    assert figures("KES 3,000,000 at 12.5%") == {"3000000", "12.5"}
