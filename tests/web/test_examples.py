"""Example questions on the landing page read as a person would ask them."""

from __future__ import annotations

import numpy as np
import pytest

from assistant.types import ANONYMOUS, DocMeta, IndexSnapshot, SearchFilters, SearchResult, User
from assistant.web.examples import corpus_examples
from tests.support.hit_factory import make_hit


def _examples(title: str, heading: str) -> tuple[str, ...]:
    hit = make_hit(1, "Some text.", source="a.md", title=title, heading_path=(title, heading))

    class FindsIt:
        """Every question finds the one section, a good match."""

        def search(
            self,
            question: str,
            *,
            k: int | None = None,
            filters: SearchFilters | None = None,
            user: User = ANONYMOUS,
        ) -> SearchResult:
            return SearchResult(query=question, hits=(hit,), trace=(), no_good_match=False)

    vectors = np.zeros((1, 2), dtype=np.float32)
    snapshot = IndexSnapshot("g", (hit.chunk,), vectors, {"a.md": DocMeta(title=title)})
    return corpus_examples(snapshot, FindsIt())


@pytest.mark.parametrize(
    ("title", "heading", "expected"),
    [
        (
            "Staff Leave Policy",
            "Carry-over",
            "What does the Staff Leave Policy say about carry-over?",
        ),
        ("The Staff Handbook", "Sick Leave", "What does the Staff Handbook say about sick leave?"),
        ("How We Work", "Meetings", "What do the policies say about meetings?"),
        (
            "Governance",
            "Role of the Board",
            "What do the policies say about the role of the board?",
        ),
        (
            "Staff Handbook",
            "Code of Conduct",
            "What does the Staff Handbook say about the code of conduct?",
        ),
    ],
)
def test_a_heading_becomes_a_question_that_names_only_documents(
    title: str, heading: str, expected: str
) -> None:
    assert _examples(title, heading) == (expected,)


@pytest.mark.parametrize("heading", ["Remotely", "Sections", "Other", "More information"])
def test_a_heading_that_names_no_topic_is_never_asked_about(heading: str) -> None:
    assert _examples("How We Work", heading) == ()
