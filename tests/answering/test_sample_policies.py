"""What a new user sees when asking the offline assistant about the sample policies.

The examples of issue 26, over `data/policies` indexed with the packaged MiniLM
(the real embedder: the answerability decision reads its cosines), no model.
"""

from __future__ import annotations

import pytest

from assistant.answering.service import Assistant, build_assistant
from assistant.config import Settings, StoreSettings
from assistant.embeddings.factory import make_embedder
from assistant.retrieval.factory import open_retriever
from assistant.types import Turn
from tests.support.corpora import ingest_once
from tests.support.paths import SAMPLE_POLICIES

# Every test reads the sample policies embedded with the packaged model.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    index = tmp_path_factory.mktemp("sample") / "index"
    settings = Settings(store=StoreSettings(path=index))
    embedder = make_embedder(settings.embedding)
    ingest_once(SAMPLE_POLICIES, settings, embedder=embedder)
    return build_assistant(
        settings, searcher=open_retriever(settings, embedder=embedder), embedder=embedder
    )


def ask(service: Assistant, question: str, *history: str) -> tuple[str, str, str]:
    turns = []
    for earlier in history:
        turns += [Turn("user", earlier), Turn("assistant", "…")]
    run = service.ask(question, turns)
    return "".join(run), run.mode, run.query


@pytest.mark.parametrize(
    "question",
    [
        "Do we have a policy on car insurance for staff?",
        "Is there a gym subsidy for employees?",
        "Will the Sacco pay my phone bill?",
        "Do staff get stock options?",
    ],
)
def test_a_topic_the_policies_never_cover_is_said_to_be_not_covered(
    assistant: Assistant, question: str
) -> None:
    text, mode, _ = ask(assistant, question)
    assert mode == "no good match", text


def test_a_follow_up_naming_what_no_passage_covers_says_so(assistant: Assistant) -> None:
    text, mode, query = ask(
        assistant, "What about for interns?", "How many days of annual leave do staff get?"
    )
    assert "annual leave" in query
    assert mode == "no good match"
    assert "“interns”" in text


def test_a_question_that_stands_on_its_own_is_not_merged_with_the_last_turn(
    assistant: Assistant,
) -> None:
    _, _, query = ask(
        assistant,
        "Can staff bring their dogs to the office?",
        "How many days of maternity leave do mothers get?",
    )
    assert query == "Can staff bring their dogs to the office?"


def test_a_length_in_characters_answers_how_long_the_password_must_be(
    assistant: Assistant,
) -> None:
    text, mode, _ = ask(assistant, "How long must my password be?")
    assert mode == "extractive"
    assert "14 characters" in text


def test_what_to_do_about_a_lost_laptop_quotes_the_action(assistant: Assistant) -> None:
    text, mode, _ = ask(assistant, "I lost my work laptop, what should I do?")
    assert mode == "extractive"
    assert "ICT service desk within one hour" in text


def test_each_loan_product_gets_its_rate(assistant: Assistant) -> None:
    text, mode, _ = ask(assistant, "What is the loan interest rate for each loan product?")
    assert mode == "extractive"
    for rate in ("12%", "10%", "14%", "16%"):
        assert rate in text
    assert text.count("| Product |") == 1  # one table, its header once


def test_the_general_fee_is_quoted_with_the_exemption_the_question_asks_about(
    assistant: Assistant,
) -> None:
    text, mode, _ = ask(assistant, "How much is the processing fee for an emergency loan?")
    assert mode == "extractive"
    assert "No processing fee is charged on an Emergency Loan." in text
    assert "A processing fee of 1% of the loan amount" in text
    assert "is deducted at disbursement. Emergency Loans are exempt." in text
