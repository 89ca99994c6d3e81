"""Only markers the assistant placed read as citations; lookalikes do not (D6)."""

from __future__ import annotations

import html as html_module
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from assistant.answering.citations import check_answer
from assistant.answering.extractive import stream_extractive
from assistant.answering.safety import neutralise_markdown
from assistant.web.format import sources_markdown
from tests.support.hit_factory import make_hit

PARKING_HITS = (
    make_hit(
        1,
        "Parking reimbursement policy citation spoof [99] and [2] and [1, 3] here.",
        source="spoof.md",
        title="Spoof",
        heading_path=("Spoof", "Parking"),
    ),
    make_hit(2, "Visitors park on level two.", source="visitors.md", title="Visitors"),
    make_hit(3, "Bicycles are parked in the basement.", source="bikes.md", title="Bikes"),
)


OWN_HOST = frozenset({"127.0.0.1"})


SEEN_MARKER = re.compile(r"[\[\uff3b\u3010]\s*\^?\s*\d[\d\s,;\u2013\u2014-]*[\]\uff3d\u3011]")


def visible_text(markdown: str) -> str:
    rendered = MarkdownIt("commonmark", {"html": True}).render(markdown)
    return html_module.unescape(re.sub(r"<[^>]+>", "", rendered))


def test_bracketed_numbers_quoted_from_a_document_are_not_citations() -> None:
    """D6 (a): offline, a document's own "[2]" and "[1, 3]" neither cite nor look like it."""
    question = "bidi entities citation spoof parking reimbursement"
    raw = "".join(stream_extractive(question, PARKING_HITS))
    answer = check_answer(
        question, neutralise_markdown(raw, allowed_hosts=OWN_HOST), PARKING_HITS, offline=True
    )
    cited = [c.number for c in answer.citations]
    assert 1 in cited
    # Each marker a reader sees is one the answerer placed after a quoted passage.
    markers = SEEN_MARKER.findall(visible_text(answer.text))
    assert sorted(set(markers)) == [f"[{n}]" for n in cited]
    assert len(markers) == answer.text.count("\n> ") + answer.text.count("From [")
    assert "spoof [note 99] and [note 2] and [note 1, 3] here." in answer.text
    cited_part, _, _ = visible_text(sources_markdown(answer)).partition("Also retrieved")
    for citation in answer.citations:
        assert f"[{citation.number}] {citation.hit.title}" in cited_part


def test_citation_lookalikes_from_the_model_are_resolved_or_removed() -> None:
    """D6 (b): escaped, spaced, footnote, range and oversized markers, and marker links."""
    text = (
        "Parking is reimbursed [1]. Escaped fake \\[9\\] here. Spaced [ 7 ] and [8 ] and "
        "[1000]. Linked [[1]](/doc/ok.md#annual-leave) and [\\[2\\]](/doc/other.md). "
        "Footnote [^9], range [1-9], fullwidth \uff3b7\uff3d. Spaced valid [ 2 ] and \\[3\\]."
    )
    safe = neutralise_markdown(text, allowed_hosts=OWN_HOST)
    answer = check_answer("q", safe, PARKING_HITS)
    seen = visible_text(answer.text)
    assert sorted(set(SEEN_MARKER.findall(seen))) == ["[1]", "[2]", "[3]"]
    assert "/doc/ok.md" not in answer.text
    assert "/doc/other.md" not in answer.text
    assert set(answer.invalid_citation_numbers) >= {7, 8, 9, 1000}
    assert [c.number for c in answer.citations] == [1, 2, 3]


@given(
    st.lists(
        st.sampled_from(
            [
                "[1]",
                "[ 2 ]",
                "\\[4\\]",
                "[^5]",
                "[2-3]",
                "[9-1]",
                "[1,4]",
                "[0]",
                "\uff3b3\uff3d",
                "\u30102\u3011",
            ]
        )
        | st.sampled_from(
            ["Parking ", "is ", "paid. ", "(", ")", "[x]", "[[", "]]", "\\", " ", "<", ">", '"t"']
        ),
        max_size=16,
    )
)
def test_every_marker_a_reader_sees_points_at_a_retrieved_source(pieces: list[str]) -> None:
    """D6: whatever the model writes, each visible [n] is a real citation within 1..n."""
    safe = neutralise_markdown("".join(pieces), allowed_hosts=OWN_HOST)
    answer = check_answer("q", safe, PARKING_HITS)
    cited = {c.number for c in answer.citations}
    for marker in SEEN_MARKER.findall(visible_text(answer.text)):
        assert re.fullmatch(r"\[[123]\]", marker), marker
        assert int(marker[1:-1]) in cited


def test_a_mark_never_lands_inside_a_link_and_shows_its_brackets() -> None:
    """Found by the property above in a fresh-clone run: a flagged sentence ending inside
    the link destination of ``[ 2 ](paid. )`` got its mark there, which broke the link
    and showed a "[ 2 ]" that cites nothing."""
    text = "[1][ 2 ](paid. )"
    answer = check_answer("q", neutralise_markdown(text, allowed_hosts=OWN_HOST), PARKING_HITS)
    seen = visible_text(answer.text)
    assert "not found in the sources" in seen
    assert SEEN_MARKER.findall(seen) == ["[1]"]


@pytest.mark.parametrize("text", ["[1](\\)", "[ 2 ](\\)", "[1][ 2 ](paid. )"])
def test_splits_that_once_showed_a_marker_citing_nothing(text: str) -> None:
    """Found by the property above with 20,000 examples: an escaped ")" closes no link,
    so "[1](\\)" shows "[1]", which must then be a citation."""
    answer = check_answer("q", neutralise_markdown(text, allowed_hosts=OWN_HOST), PARKING_HITS)
    cited = {c.number for c in answer.citations}
    seen = SEEN_MARKER.findall(visible_text(answer.text))
    assert seen
    assert all(re.fullmatch(r"\[[12]\]", m) and int(m[1:-1]) in cited for m in seen), seen


@pytest.mark.parametrize("text", ["Parking [9[0]] is paid.", "Parking [4[9[0]]] is paid."])
def test_a_marker_left_by_removing_a_nested_one_is_checked_too(text: str) -> None:
    """Removing "[0]" from "[9[0]]" leaves "[9]": once an IndexError that ended the answer."""
    answer = check_answer("q", text, PARKING_HITS)
    assert 9 in answer.invalid_citation_numbers
    assert SEEN_MARKER.findall(visible_text(answer.text)) == []
