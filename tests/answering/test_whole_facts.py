"""Answers that carry the whole fact: whole tables for "each" questions, the action asked for."""

from __future__ import annotations

from assistant.answering.asking import ACTION, asked_value
from assistant.answering.extractive import draft_extractive
from assistant.answering.wholes import asks_for_all
from tests.support.hit_factory import make_hit

LOANS = make_hit(
    1,
    "## Loan products\n\n"
    "| Product | Interest |\n|---|---|\n"
    "| Emergency | 12% per annum |\n| School Fees | 10% per annum |\n"
    "| Development | 14% per annum |\n| Asset Finance | 16% per annum |\n",
    source="loan-policy.md",
    title="Loan Policy",
    heading_path=("Loan Policy", "Loan products"),
)
INCIDENTS = make_hit(
    1,
    "## Security incidents\n\n"
    "Examples of a security incident include a lost laptop or a phishing email.\n\n"
    "Report every suspected incident to the ICT service desk within one hour.",
    source="it-security.md",
    title="IT Security Policy",
    heading_path=("IT Security Policy", "Security incidents"),
)


def test_an_each_question_gets_the_whole_table_with_its_header_once() -> None:
    draft = draft_extractive("What is the interest rate for each loan product?", (LOANS,))
    text = draft.text
    for rate in ("12%", "10%", "14%", "16%"):
        assert rate in text
    assert text.count("| Product | Interest |") == 1


def test_a_question_about_one_product_is_not_given_the_whole_table() -> None:
    draft = draft_extractive("What is the interest rate on an Emergency loan?", (LOANS,))
    assert "12%" in draft.text
    assert "16%" not in draft.text


def test_asking_for_each_or_all() -> None:
    assert asks_for_all("What is the rate for each loan product?")
    assert asks_for_all("List all the public holidays")
    assert not asks_for_all("What is the emergency loan rate?")


def test_what_should_i_do_asks_for_an_action_and_gets_it() -> None:
    question = "I lost my work laptop, what should I do?"
    assert asked_value(question) is ACTION
    draft = draft_extractive(question, (INCIDENTS,))
    assert "Report every suspected incident to the ICT service desk" in draft.text
