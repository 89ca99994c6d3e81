"""The organisation's own rule comes before a rule of a place the question does not name."""

from __future__ import annotations

from assistant.answering.extractive import draft_extractive
from assistant.answering.regions import asks_about_places, is_regional
from tests.support.hit_factory import make_hit

OWN = make_hit(
    1,
    "Teammates receive 16 weeks of paid parental leave after the birth of a child.",
    source="parental-leave.md",
    title="Parental Leave",
    heading_path=("Parental Leave", "Paid parental leave"),
)
STATE = make_hit(
    2,
    "In California the State programme pays 14 weeks of paid leave for a new baby.",
    source="parental-leave.md",
    title="Parental Leave",
    heading_path=("Parental Leave", "Statutory programmes"),
)


def _first_quote(question: str) -> str:
    draft = draft_extractive(question, (STATE, OWN))
    return draft.passages[0].text


def test_the_organisations_own_rule_is_quoted_before_a_states_programme() -> None:
    assert _first_quote("How long is paid leave when I have a baby?").startswith("Teammates")


def test_a_question_naming_the_place_gets_that_places_rule_first() -> None:
    assert _first_quote("How long is paid leave for a baby in California?").startswith(
        "In California"
    )


def test_rules_of_a_place_are_told_without_a_list_of_places() -> None:
    assert is_regional("If the country of residence provides 6 weeks of maternity leave")
    assert is_regional("Benefits apply to US-based teammates only.")
    assert is_regional("Each state runs its own paid family leave programme.")
    assert not is_regional("Sourcegraph pays 100% of your salary for up to 16 weeks.")
    assert not is_regional("We use a zone-based pay model.")
    assert not is_regional("Please state the reason for your request.")
    # A caveat leaves the rule the organisation's own.
    assert not is_regional("The first 4 weeks are paid, unless local statutory leave differs.")


def test_a_question_names_a_place_by_kind_or_by_the_units_own_name() -> None:
    assert asks_about_places("I'm based outside the US: how do I request leave?", "")
    assert asks_about_places("I'll be staying in Crimea", "accounts in Crimea")
    assert not asks_about_places("How long is paid leave when I have a baby?", "In California")
