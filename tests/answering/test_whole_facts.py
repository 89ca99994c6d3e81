"""Answers that carry the whole fact: whole tables for "each" questions, the action asked for."""

from __future__ import annotations

from assistant.answering.asking import ACTION, asked_value
from assistant.answering.extractive import draft_extractive
from assistant.answering.wholes import asks_for_all, is_exception
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


FEES = make_hit(
    1,
    "## Processing Fee\n\n"
    "A processing fee of 1% of the loan amount, with a minimum of KES 500, is deducted at "
    "disbursement. Emergency Loans are exempt. All loans also carry a loan protection premium "
    "that clears the balance if the borrower dies.",
    source="loan-policy.md",
    title="Loan Policy",
    heading_path=("Loan Policy", "Processing Fee"),
)
GIFTS = make_hit(
    1,
    "## Anniversary gift budget\n\n"
    "Anniversary gifts come from the team budget and should not exceed the following amounts "
    "per teammate and per year:\n\n"
    "- Year 1: $50 USD\n- Year 2: $100 USD\n- Year 3: $150 USD\n- Year 5+: $250 USD\n",
    source="celebrate.md",
    title="Celebrations",
    heading_path=("Celebrations", "Anniversary gift budget"),
)


def test_an_exception_in_the_rules_section_comes_with_it_when_the_question_names_the_case() -> None:
    draft = draft_extractive("How much is the processing fee on an emergency loan?", (FEES,))
    assert "A processing fee of 1% of the loan amount" in draft.text
    assert "is deducted at disbursement. Emergency Loans are exempt." in draft.text


def test_a_question_that_names_no_excepted_case_gets_the_rule_alone() -> None:
    draft = draft_extractive("How much is the loan processing fee?", (FEES,))
    assert "A processing fee of 1% of the loan amount" in draft.text
    assert "exempt" not in draft.text


def test_exception_sentences() -> None:
    assert is_exception("Emergency Loans are exempt.")
    assert is_exception("No processing fee is charged on an Emergency Loan.")
    assert is_exception("This does not apply to interns.")
    assert not is_exception("No. Deposits are non-withdrawable while you are a member.")
    assert not is_exception("A processing fee of 1% is deducted at disbursement.")


def test_a_lead_in_is_quoted_with_its_short_list() -> None:
    draft = draft_extractive("What is the gift budget for a fifth work anniversary?", (GIFTS,))
    assert "should not exceed the following amounts per teammate and per year: Year 1" in draft.text
    assert "Year 5+: $250 USD" in draft.text
    assert draft.text.count("Year 5+") == 1


TIPPING = make_hit(
    1,
    "## Confidentiality\n\n"
    "Reports go to the MLRO on the internal form the same day. "
    "Staff must not tell the member, or anyone else, that a report has been made. "
    "Doing so is known as tipping off and is a criminal offence.",
    source="aml.md",
    title="AML Policy",
    heading_path=("AML Policy", "Confidentiality"),
)


def test_a_sentence_pointing_back_is_quoted_with_the_sentence_it_points_to() -> None:
    draft = draft_extractive("What is tipping off?", (TIPPING,))
    assert draft.passages[0].text == (
        "Staff must not tell the member, or anyone else, that a report has been made. "
        "Doing so is known as tipping off and is a criminal offence."
    )
