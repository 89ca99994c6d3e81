"""Follow-up questions after an answer come from the cited section's neighbours (issue 30, 11)."""

from __future__ import annotations

import numpy as np

from assistant.types import (
    ANONYMOUS,
    Answer,
    Citation,
    DocMeta,
    Hit,
    IndexSnapshot,
    SearchFilters,
    SearchResult,
    User,
)
from assistant.web.suggestions import follow_ups, neighbour_paths
from tests.support.hit_factory import make_hit

TITLE = "Staff Leave Policy"
SECTIONS = (
    (TITLE, "Annual Leave"),
    (TITLE, "Annual Leave", "Carry-over"),
    (TITLE, "Sick Leave"),
    (TITLE, "Maternity Leave"),
    (TITLE, "Sections"),
    (TITLE, "Role of the Board"),
)


def _hits() -> list[Hit]:
    return [
        make_hit(n, f"Text of {path[-1]}.", source="leave.md", heading_path=path, title=TITLE)
        for n, path in enumerate(SECTIONS)
    ]


def _snapshot(hits: list[Hit]) -> IndexSnapshot:
    vectors = np.zeros((len(hits), 2), dtype=np.float32)
    chunks = tuple(h.chunk for h in hits)
    return IndexSnapshot("g", chunks, vectors, {"leave.md": DocMeta(title=TITLE)})


class Finds:
    """Finds the section a question names (its heading's words), unless it is unanswerable."""

    def __init__(self, hits: list[Hit], unanswerable: str = "") -> None:
        self.hits, self.unanswerable = hits, unanswerable
        self.users: list[User] = []

    def search(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        user: User = ANONYMOUS,
    ) -> SearchResult:
        self.users.append(user)
        found = tuple(h for h in self.hits if h.chunk.heading_path[-1].lower() in question.lower())
        weak = not found or (self.unanswerable and self.unanswerable in question)
        return SearchResult(query=question, hits=found, trace=(), no_good_match=bool(weak))


def _answer(hits: list[Hit], cited: int) -> Answer:
    return Answer(
        "How much annual leave?", "21 days [1].", (hits[cited],), (Citation(1, hits[cited]),)
    )


def test_the_neighbours_are_the_nearest_siblings_then_the_subsections() -> None:
    hits = _hits()
    paths = neighbour_paths((h.chunk for h in hits), "leave.md", SECTIONS[0])
    assert paths == [SECTIONS[2], SECTIONS[3], SECTIONS[4], SECTIONS[5], SECTIONS[1]]


def test_up_to_three_answerable_questions_about_the_neighbouring_sections() -> None:
    hits = _hits()
    searcher = Finds(hits, unanswerable="maternity")
    user = User("ann", frozenset({"hr"}))
    questions = follow_ups(_answer(hits, 0), _snapshot(hits), searcher, user=user)
    assert questions == (
        "What does the Staff Leave Policy say about sick leave?",
        # Maternity leave finds no good match, "Sections" names no topic: both left out.
        "What does the Staff Leave Policy say about the role of the board?",
        "What does the Staff Leave Policy say about carry-over?",
    )
    assert set(searcher.users) == {user}


def test_no_suggestion_repeats_the_question_or_a_cited_section() -> None:
    hits = _hits()
    both = (hits[0], hits[2])
    answer = Answer(
        "What does the Staff Leave Policy say about the role of the board?",
        "21 days [1], 14 days [2].",
        both,
        (Citation(1, hits[0]), Citation(2, hits[2])),
    )
    questions = follow_ups(answer, _snapshot(hits), Finds(hits))
    assert questions == (
        "What does the Staff Leave Policy say about maternity leave?",
        "What does the Staff Leave Policy say about carry-over?",
    )


def test_an_answer_without_citations_gets_no_suggestions() -> None:
    hits = _hits()
    answer = Answer("Anything?", "Not covered.", (hits[0],), ())
    assert follow_ups(answer, _snapshot(hits), Finds(hits)) == ()
