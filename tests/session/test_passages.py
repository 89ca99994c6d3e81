"""Each citation marker relies on its own sentence; sources are numbered as first cited."""

from __future__ import annotations

from assistant.session.passages import (
    MAX_PASSAGE_CHARS,
    marker_passages,
    passage_for,
    renumbered,
    shown_numbers,
)
from tests.support.hit_factory import make_hit

LEAVE = make_hit(
    1,
    "Every employee is entitled to 24 working days of paid annual leave per leave year. "
    "Employees who join or leave during the year earn two days for each full month worked.",
    source="leave.md",
)
LOANS = make_hit(2, "Emergency loans carry interest at 12% a year.", source="loans.md")


def test_two_markers_of_one_source_rely_on_the_two_sentences_they_follow() -> None:
    text = (
        "You get 24 working days of paid annual leave [1]. If you join during the year "
        "you earn two days for each full month worked [1]."
    )
    passages = [m.passage for m in marker_passages(text, (LEAVE, LOANS))]
    assert passages == [
        "Every employee is entitled to 24 working days of paid annual leave per leave year.",
        "Employees who join or leave during the year earn two days for each full month worked.",
    ]


def test_a_marker_after_the_full_stop_belongs_to_the_sentence_before_it() -> None:
    text = "Joiners earn two days for each full month worked. [1] Loans cost 12% a year [2]."
    assert [m.passage[:9] for m in marker_passages(text, (LEAVE, LOANS))] == [
        "Employees",
        "Emergency",
    ]


def test_a_marker_naming_no_source_has_no_passage() -> None:
    assert marker_passages("Something [3].", (LEAVE, LOANS)) == ()


def test_a_long_sentence_is_cut_at_a_word_end_never_inside_a_word() -> None:
    words = " ".join(f"allowance{n}" for n in range(80))
    hit = make_hit(1, f"The ICT unit may withdraw access {words}.", source="ict.md")
    passage = passage_for(hit, "ICT withdraw access allowance3")
    assert len(passage) <= MAX_PASSAGE_CHARS
    assert passage.split()[-1].startswith("allowance")
    assert passage.split()[-1][len("allowance") :].isdigit()
    assert f"The ICT unit may withdraw access {words}.".startswith(passage)


def test_sources_are_numbered_in_the_order_first_cited() -> None:
    text = "Loans cost 12% [3]. Leave is 24 days [1]. Again [3]."
    numbers = shown_numbers(text, 3)
    assert numbers == {3: 1, 1: 2, 2: 3}
    assert renumbered(text, numbers) == "Loans cost 12% [1]. Leave is 24 days [2]. Again [1]."
