"""Issue 30 (1): each [n] of an answer is a link to its passage, named by the full section path."""

from __future__ import annotations

from assistant.types import Answer, Citation
from assistant.web.answer_view import sources_title
from assistant.web.format import history_to_turns, linked_markers, section_path, unlinked_markers
from assistant.web.history import conversation_markdown
from tests.support.hit_factory import make_hit

DEEP = ("Loan Policy", "Loan Products", "Emergency Loans", "Interest")


def _answer() -> Answer:
    one = make_hit(
        1,
        "Emergency Loans carry interest at 12% per annum. No fee is charged.",
        source="loan-policy.md",
        heading_path=DEEP,
        title="Loan Policy",
    )
    two = make_hit(2, "Staff get 25 days of annual leave.")
    text = "Interest is 12% per annum [1]. Staff get 25 days [2]. Not a source [7]."
    return Answer("q", text, (one, two), (Citation(1, one), Citation(2, two)))


def test_each_marker_links_to_its_passage_and_names_the_whole_section_path() -> None:
    linked = linked_markers(_answer().text, _answer())

    assert "[\\[1\\]](/doc/loan-policy.md?passage=Emergency%20Loans%20carry" in linked
    assert '#cited "[1] Loan Policy > Loan Products > Emergency Loans > Interest")' in linked
    assert "[\\[2\\]](/doc/leave.md?passage=Staff%20get%2025" in linked
    assert "Not a source [7]." in linked, "a marker of no source stays text"


def test_escaped_markers_and_link_labels_are_not_linked() -> None:
    answer = _answer()
    text = "Escaped \\[1\\] and a link [1](https://example.org) stay."
    assert linked_markers(text, answer) == text


def test_the_model_and_the_audit_read_plain_markers_again() -> None:
    answer = _answer()
    linked = linked_markers(answer.text, answer)

    assert unlinked_markers(linked) == answer.text
    turns = history_to_turns([{"role": "assistant", "content": linked}])
    assert turns[0].text == answer.text


def test_the_sources_summary_names_the_full_section_path() -> None:
    answer = _answer()
    assert section_path(answer.sources[0]) == " > ".join(DEEP)
    assert "Loan Policy &gt; Loan Products &gt; Emergency Loans &gt; Interest" in sources_title(
        answer
    )


def test_an_export_reads_the_citation_links_as_plain_markers() -> None:
    answer = _answer()
    history = [{"role": "assistant", "content": linked_markers(answer.text, answer)}]
    exported = conversation_markdown(history, base_url="http://chat.example/", title="t")

    assert answer.text in exported
    assert "/doc/" not in exported
