"""A question that asks for a value is answered only by a passage that states one."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assistant.answering.asking import asked_value, question_parts, states_value
from assistant.answering.extractive import draft_extractive, stream_extractive
from tests.support.hit_factory import make_hit

UPTIME = make_hit(
    1,
    "## Service levels\n\nThe quarterly uptime commitment for Enterprise Cloud is set out in "
    "the Enterprise Service Level Agreement. Planned maintenance is announced in advance.",
    title="Service Levels",
    heading_path=("Service Levels",),
)
UPTIME_STATED = make_hit(
    1,
    "## Service levels\n\nEnterprise Cloud guarantees 99.9% uptime each quarter. Planned "
    "maintenance is announced in advance.",
    title="Service Levels",
    heading_path=("Service Levels",),
)
SUPPORT = make_hit(
    1,
    "## Contact\n\nWe do not offer telephone support. Write to us through the support portal.",
    title="Support",
    heading_path=("Support",),
)


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("What uptime percentage does GitHub guarantee each quarter?", "a percentage"),
        ("What is the interest rate on an emergency loan?", "a percentage"),
        ("How long do I have to appeal?", "a length of time"),
        ("How long must the passcode be?", "a length"),
        ("How much unused annual leave can be carried forward?", "a length of time"),
        ("How many weeks of parental leave do staff get?", "a length of time"),
        ("How much is the entrance fee for new members?", "an amount"),
        ("How many guarantors does a development loan need?", "a number"),
        ("What is the phone number of the ethics hotline?", "a phone number"),
        ("What is the maximum file size I can push?", "a size"),
        ("On which day of the month do payouts go out?", "a date"),
        ("When does a new developer receive their first payout?", "a time"),
    ],
)
def test_the_value_a_question_asks_for(question: str, kind: str) -> None:
    asked = asked_value(question)
    assert asked is not None
    assert asked.name == kind


@pytest.mark.parametrize(
    "question",
    [
        "Is there a number I can ring to speak to a real person?",
        "Someone posted my home address and phone number in a repo. Is that allowed?",
        "Can I take my dog to the branch?",
        "Explain how loan guarantors work.",
    ],
)
def test_yes_no_and_open_questions_ask_for_no_value(question: str) -> None:
    assert asked_value(question) is None


def test_values_are_recognised_in_passages() -> None:
    percentage = asked_value("What percentage is withheld?")
    amount = asked_value("How much is the fee?")
    duration = asked_value("How long does it take?")
    assert percentage is not None
    assert amount is not None
    assert duration is not None
    assert states_value(percentage, "Interest is 12% per annum.")
    assert not states_value(percentage, "Interest is charged monthly.")
    assert states_value(amount, "The fee is KES 1,000.")
    assert states_value(amount, "Changing your nominees is free.")
    length = asked_value("How long must the passcode be?")
    assert length is not None
    assert states_value(length, "Passwords must be at least 14 characters long.")
    assert states_value(length, "The notice must be two weeks.")
    assert not states_value(length, "Passwords must be changed when compromised.")
    assert not states_value(amount, "The fee is set by the Board.")
    assert states_value(duration, "We wait 10-14 days and then restore it.")
    assert not states_value(duration, "We restore it after a review.")


def test_a_passage_on_the_topic_without_the_value_is_not_an_answer() -> None:
    question = "What uptime percentage does Enterprise Cloud guarantee each quarter?"
    draft = draft_extractive(question, (UPTIME,))
    assert not draft.covered
    assert "percentage" in draft.reason


def test_the_passage_that_states_the_value_is_quoted() -> None:
    question = "What uptime percentage does Enterprise Cloud guarantee each quarter?"
    text = "".join(stream_extractive(question, (UPTIME_STATED,)))
    assert "> Enterprise Cloud guarantees 99.9% uptime each quarter. [1]" in text


def test_a_no_answers_a_yes_no_question_about_a_value() -> None:
    draft = draft_extractive("Is there a phone number for telephone support?", (SUPPORT,))
    assert draft.covered
    assert draft.passages[0].text == "We do not offer telephone support."


_AUXILIARIES = st.sampled_from(["Is", "Are", "Do", "Does", "Can", "May", "Will", "Should"])


@given(_AUXILIARIES, st.text(max_size=80))
def test_a_question_that_starts_yes_no_never_asks_for_a_value(aux: str, rest: str) -> None:
    rest = rest.replace(".", " ").replace("!", " ").replace("?", " ")
    assert asked_value(f"{aux} {rest}?") is None


@given(st.text(max_size=200))
def test_any_text_is_classified_without_error(text: str) -> None:
    kind = asked_value(text)
    if kind is not None:
        assert isinstance(states_value(kind, text), bool)


def test_a_possessive_s_is_not_part_of_the_question_topic() -> None:
    from assistant.answering.ranking import focus_words

    assert "s" not in focus_words("What is the phone number of GitHub's hotline?")


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("What is the overtime rate for staff who work late?", "a rate"),
        ("What is the minimum password length for an account?", "a number"),
        ("What is the highest reward paid for a critical bug?", "a number"),
    ],
)
def test_rates_lengths_and_extremes_ask_for_a_value(question: str, kind: str) -> None:
    asked = asked_value(question)
    assert asked is not None
    assert asked.name == kind


def test_a_year_no_passage_mentions_is_not_covered() -> None:
    dividends = make_hit(
        1,
        "## Dividends\n\nThe Sacco paid a dividend of 9% on share capital in 2024.",
        title="Dividend Policy",
        heading_path=("Dividend Policy",),
    )
    draft = draft_extractive("What dividend did the Sacco pay in 2019?", (dividends,))
    assert not draft.covered
    assert "2019" in draft.reason
    assert draft_extractive("What dividend did the Sacco pay in 2024?", (dividends,)).covered


def test_the_word_percentage_is_no_percentage() -> None:
    percentage = asked_value("What uptime percentage does the Sacco guarantee?")
    assert percentage is not None
    assert not states_value(percentage, "Where a fee is a percentage, the minimum applies.")
    assert states_value(percentage, "GitHub matches one hundred percent of sponsorships.")
    assert states_value(percentage, "Interest is 12 per cent a year.")


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "What per diem do I get for a trip, and how soon must I submit the claim?",
            ("What per diem do I get for a trip", "how soon must I submit the claim"),
        ),
        (
            "Who approves a Development Loan and how many guarantors does it need?",
            ("Who approves a Development Loan", "how many guarantors does it need"),
        ),
    ],
)
def test_a_two_part_question_is_split_at_its_second_question(
    question: str, parts: tuple[str, ...]
) -> None:
    assert question_parts(question) == parts


@pytest.mark.parametrize(
    "question",
    [
        "What happens to my deposits and to my share capital?",
        "Can I have an account and receive money through Sponsors?",
        "How many days of leave do I get?",
        "Explain this, and how?",
    ],
)
def test_a_question_about_one_thing_has_no_parts(question: str) -> None:
    assert question_parts(question) == ()


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "How does the interest on an Emergency Loan compare with a School Fees Loan?",
            (
                "How does the interest on an Emergency Loan",
                "How does the interest on a School Fees Loan",
            ),
        ),
        (
            "What is the difference between annual leave and sick leave?",
            ("annual leave", "sick leave"),
        ),
    ],
)
def test_a_comparison_has_the_two_things_compared_as_parts(
    question: str, parts: tuple[str, ...]
) -> None:
    assert question_parts(question) == parts
