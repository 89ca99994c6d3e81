"""Citation markers are validated against the numbered sources and checked for support."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from assistant.answering.citations import check_answer, cited_numbers
from tests.support.hit_factory import make_hit

LEAVE = make_hit(1, "Full-time members receive 25 days of annual leave per calendar year.")
CARRY = make_hit(
    2,
    "Up to 5 unused days may be carried over to the next year.",
    heading_path=("Leave Policy", "Carry-over"),
)
HOTEL = make_hit(
    3,
    "Hotel costs are reimbursed up to 150 EUR per night.",
    source="travel policy.md",
    title="Travel",
    heading_path=("Travel", "Hotels"),
    page=2,
)
SOURCES = (LEAVE, CARRY, HOTEL)


def test_marker_forms_are_recognised() -> None:
    assert cited_numbers("a [1] b [2, 3] c [3][1] d [link](x) e [4](y)") == [1, 2, 3, 3, 1]


def test_invalid_markers_removed_and_recorded() -> None:
    answer = check_answer("q", "Members get 25 days of annual leave [1][7]. Other [9].", SOURCES)
    assert answer.text == "Members get 25 days of annual leave [1]. Other."
    assert answer.invalid_citation_numbers == (7, 9)
    assert [c.number for c in answer.citations] == [1]


def test_partially_invalid_list_keeps_valid_numbers() -> None:
    answer = check_answer("q", "Hotels are reimbursed up to 150 EUR per night [3, 12].", SOURCES)
    assert answer.text == "Hotels are reimbursed up to 150 EUR per night [3]."
    assert answer.invalid_citation_numbers == (12,)


def test_only_cited_sources_in_citations_and_numbers_stay_indices() -> None:
    answer = check_answer(
        "q", "Unused days may be carried over, up to 5 [2]. Hotels: 150 EUR per night [3].", SOURCES
    )
    assert [(c.number, c.hit) for c in answer.citations] == [(2, CARRY), (3, HOTEL)]
    assert answer.sources == SOURCES  # [n] is always sources[n - 1]
    assert answer.unsupported_sentences == ()


def test_unsupported_sentence_flagged() -> None:
    text = (
        "Full-time members receive 25 days of annual leave [1]. "
        "Members get 40 days of paid sabbatical after ten years [1]. "
        "Pets are allowed in the office on Fridays [2]."
    )
    answer = check_answer("q", text, SOURCES)
    assert answer.unsupported_sentences == (
        "Members get 40 days of paid sabbatical after ten years [1].",
        "Pets are allowed in the office on Fridays [2].",
    )


def test_wrong_number_is_unsupported_even_with_word_overlap() -> None:
    answer = check_answer("q", "Full-time members receive 30 days of annual leave [1].", SOURCES)
    assert len(answer.unsupported_sentences) == 1


def test_citation_after_full_stop_belongs_to_that_sentence() -> None:
    answer = check_answer("q", "Members receive 25 days of annual leave. [1] Hello.", SOURCES)
    assert answer.unsupported_sentences == ()
    assert [c.number for c in answer.citations] == [1]


def test_sentences_without_citations_are_not_checked() -> None:
    answer = check_answer("q", "I cannot find this in the policies.", SOURCES)
    assert answer.citations == ()
    assert answer.unsupported_sentences == ()


@given(text=st.text(alphabet="ab [],0123456789.\n", max_size=80))
def test_cleaned_text_only_cites_existing_sources(text: str) -> None:
    answer = check_answer("q", text, SOURCES)
    assert all(1 <= n <= len(SOURCES) for n in cited_numbers(answer.text))
    assert {c.number for c in answer.citations} == set(cited_numbers(answer.text))
