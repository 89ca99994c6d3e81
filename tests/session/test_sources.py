"""An answer's sources as data: numbered as the markers, the passage in the link, which to show."""

from __future__ import annotations

from assistant.session.sources import shown_entries, source_entries
from assistant.types import Answer, Citation
from tests.support.hit_factory import make_hit

LOANS = make_hit(
    1,
    "Emergency loans carry interest at 12% a year. They are repaid over a year.",
    source="loans.md",
)
LEAVE = make_hit(2, "Staff get 21 days of annual leave.", source="leave.md")


def answer(text: str, cited: tuple[int, ...]) -> Answer:
    sources = (LOANS, LEAVE)
    citations = tuple(Citation(number=n, hit=sources[n - 1]) for n in cited)
    return Answer("q", text, sources, citations=citations)


def test_every_source_is_numbered_as_its_marker_and_says_whether_it_is_cited() -> None:
    entries = source_entries(answer("Staff get 21 days [2].", cited=(2,)))
    assert [(e.number, e.hit.chunk.source, e.cited) for e in entries] == [
        (1, "loans.md", False),
        (2, "leave.md", True),
    ]


def test_a_cited_source_links_to_the_sentence_the_answer_relies_on() -> None:
    entries = source_entries(answer("Emergency loans cost 12% interest [1].", cited=(1,)))
    assert entries[0].passage == "Emergency loans carry interest at 12% a year."
    assert entries[0].path.startswith("/doc/loans.md?passage=Emergency%20loans")
    assert entries[1].passage == ""
    assert entries[1].path == "/doc/leave.md#annual-leave"


def test_only_the_cited_sources_are_shown() -> None:
    entries = source_entries(answer("Staff get 21 days [2].", cited=(2,)))
    assert [e.number for e in shown_entries(entries)] == [2]


def test_every_source_is_shown_when_none_is_cited() -> None:
    entries = source_entries(answer("The policies do not cover this.", cited=()))
    assert [e.number for e in shown_entries(entries)] == [1, 2]


def test_the_updated_date_comes_from_the_lookup_given() -> None:
    entries = source_entries(
        answer("Staff get 21 days [2].", cited=(2,)),
        updated=lambda hit: "2026-03-01" if hit.chunk.source == "leave.md" else "",
    )
    assert [e.updated_on for e in entries] == ["", "2026-03-01"]


def test_entries_carry_the_number_shown_and_each_markers_passage() -> None:
    text = "Staff get 21 days [2]. Loans cost 12% interest [1]. They are repaid over a year [1]."
    entries = source_entries(answer(text, cited=(1, 2)))
    assert [(e.number, e.shown) for e in entries] == [(1, 2), (2, 1)]
    assert entries[0].passages == (
        "Emergency loans carry interest at 12% a year.",
        "They are repaid over a year.",
    )
    assert [e.number for e in shown_entries(entries)] == [2, 1]
