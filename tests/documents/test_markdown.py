"""Markdown structure: sections, heading paths, blocks, FAQ grouping and offsets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from assistant.documents.markdown import parse_markdown
from assistant.types import Section


def _parse(src: str, *, fallback: str = "Fallback") -> tuple[str, tuple[Section, ...]]:
    meta, sections = parse_markdown(src, fallback_title=fallback)
    return meta.title, sections


def _blocks(src: str, sections: tuple[Section, ...]) -> list[tuple[str, str]]:
    return [(b.kind, src[b.char_start : b.char_end]) for s in sections for b in s.blocks]


def _check_invariants(src: str, sections: tuple[Section, ...]) -> None:
    previous_end = 0
    for section in sections:
        assert section.char_start <= section.char_end <= len(src)
        for block in section.blocks:
            assert src[block.char_start : block.char_end].strip()
            assert section.char_start <= block.char_start < block.char_end <= section.char_end
            assert block.char_start >= previous_end
            previous_end = block.char_end
    starts = [s.char_start for s in sections]
    assert starts == sorted(starts)


def test_nested_heading_paths_with_h1_title() -> None:
    src = (
        "# Loan Policy\n\nIntro.\n\n## Emergency Loans\n\nText.\n\n"
        "### Interest\n\nRate.\n\n## Other\n\nX.\n"
    )
    title, sections = _parse(src)
    assert title == "Loan Policy"
    assert [s.heading_path for s in sections] == [
        ("Loan Policy",),
        ("Loan Policy", "Emergency Loans"),
        ("Loan Policy", "Emergency Loans", "Interest"),
        ("Loan Policy", "Other"),
    ]
    assert [s.level for s in sections] == [1, 2, 3, 2]
    assert src[sections[2].char_start : sections[2].char_end] == "### Interest\n\nRate.\n\n"
    _check_invariants(src, sections)


def test_setext_trailing_hashes_and_emphasis_in_headings() -> None:
    src = (
        "Big *Title*\n===========\n\nA.\n\n"
        "Sub [link](http://x) `code`\n---\n\nB.\n\n## Closed ##\n\nC.\n"
    )
    title, sections = _parse(src)
    assert title == "Big Title"
    assert [s.heading_path[-1] for s in sections] == ["Big Title", "Sub link code", "Closed"]
    assert [s.anchor for s in sections] == ["big-title", "sub-link-code", "closed"]


def test_no_h1_prepends_title_and_preamble_section() -> None:
    src = "Intro line.\n\n## Scope\n\nText.\n"
    title, sections = _parse(src, fallback="Travel Rules")
    assert title == "Travel Rules"
    assert [(s.heading_path, s.level) for s in sections] == [
        (("Travel Rules",), 0),
        (("Travel Rules", "Scope"), 2),
    ]
    assert sections[0].anchor == ""


CAPTION = (
    "Figure 7: quarterly loan disbursements by branch, broken down by product, with the "
    "emergency, development and school fee loans shown separately and the totals for each "
    "region given underneath, as reported by the branch managers to the credit committee"
)


def test_a_late_setext_h1_is_a_heading_but_not_the_title() -> None:
    src = f"Intro.\n\n## Scope\n\nText.\n\n{CAPTION}\n=\n\nAfter the figure.\n"
    title, sections = _parse(src, fallback="Credit Report")
    assert title == "Credit Report"
    assert [s.heading_path for s in sections] == [
        ("Credit Report",),
        ("Credit Report", "Scope"),
        (CAPTION,),
    ]


def test_an_h1_after_one_leading_block_is_still_the_title() -> None:
    title, _ = _parse("> Draft, not yet approved.\n\n# Loan Policy\n\nText.\n")
    assert title == "Loan Policy"
    title, _ = _parse("Intro.\n\nMore intro.\n\n# Late Heading\n\nText.\n")
    assert title == "Fallback"


def test_blank_preamble_is_skipped() -> None:
    _, sections = _parse("\n\n# A\n\nText.\n")
    assert [s.heading_path for s in sections] == [("A",)]


def test_hash_inside_fence_and_indented_heading_are_code() -> None:
    src = "# T\n\n```\n# not a heading\n```\n\n    ## indented\n\nEnd.\n"
    _, sections = _parse(src)
    assert len(sections) == 1
    assert _blocks(src, sections) == [
        ("code", "```\n# not a heading\n```"),
        ("code", "    ## indented"),
        ("paragraph", "End."),
    ]


def test_unclosed_fence_runs_to_end_of_document() -> None:
    src = "# T\n\n```python\nx = 1\n# comment\n\n## still code\n"
    _, sections = _parse(src)
    assert len(sections) == 1
    assert _blocks(src, sections) == [("code", "```python\nx = 1\n# comment\n\n## still code")]


def test_lists_tables_quotes_and_rules() -> None:
    src = (
        "# T\n\n- one\n  - nested\n- two\n\n1. first\n\n2. second\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n> quoted\n> more\n\n---\n\n<div>x</div>\n"
    )
    _, sections = _parse(src)
    assert _blocks(src, sections) == [
        ("list_item", "- one\n  - nested"),
        ("list_item", "- two"),
        ("list_item", "1. first"),
        ("list_item", "2. second"),
        ("table", "| a | b |\n|---|---|\n| 1 | 2 |"),
        ("other", "> quoted\n> more"),
        ("other", "<div>x</div>"),
    ]


def test_bold_questions_become_faq_blocks_and_question_headings_sections() -> None:
    src = (
        "# FAQ\n\n**How do I apply?**\n\nFill in the form.\n\n- step one\n\n"
        "**Q: Who approves?**\n\nYour manager.\n\n## Can I appeal?\n\nYes.\n"
    )
    _, sections = _parse(src)
    assert _blocks(src, sections[:1]) == [
        ("faq", "**How do I apply?**\n\nFill in the form.\n\n- step one"),
        ("faq", "**Q: Who approves?**\n\nYour manager."),
    ]
    assert sections[1].heading_path == ("FAQ", "Can I appeal?")
    assert _blocks(src, sections[1:]) == [("paragraph", "Yes.")]


def test_bold_statement_is_not_a_question() -> None:
    src = "# T\n\n**Important.**\n\nText.\n"
    _, sections = _parse(src)
    assert [k for k, _ in _blocks(src, sections)] == ["paragraph", "paragraph"]


def test_duplicate_anchors_get_suffixes() -> None:
    src = "# T\n\n## Scope\n\na\n\n## Scope\n\nb\n\n## Scope\n\nc\n"
    _, sections = _parse(src)
    assert [s.anchor for s in sections] == ["t", "scope", "scope-1", "scope-2"]


def test_front_matter_is_in_no_section_and_offsets_stay_in_file_text() -> None:
    src = "---\ntitle: Leave\ntags: [A, b]\n---\n# Heading\n\nBody.\n"
    meta, sections = parse_markdown(src, fallback_title="x")
    assert meta.title == "Leave"
    assert meta.tags == ("a", "b")
    assert sections[0].char_start == src.index("# Heading")
    assert _blocks(src, sections) == [("paragraph", "Body.")]


# ---- property test -------------------------------------------------------

_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8)
_line = st.lists(_word, min_size=1, max_size=5).map(" ".join)


@st.composite
def _element(draw: st.DrawFn) -> tuple[list[str], set[int]]:
    """Return an element's lines and the indexes of its heading lines."""
    kind = draw(st.sampled_from(["atx", "setext", "para", "list", "fence", "table"]))
    if kind == "atx":
        return [f"{'#' * draw(st.integers(1, 6))} {draw(_line)}"], {0}
    if kind == "setext":
        return [draw(_line), draw(st.sampled_from(["===", "---"]))], {0, 1}
    if kind == "para":
        return draw(st.lists(_line, min_size=1, max_size=3)), set()
    if kind == "list":
        items = draw(st.lists(st.tuples(_line, st.booleans()), min_size=1, max_size=4))
        return [
            ("  - " if nested and i else "- ") + t for i, (t, nested) in enumerate(items)
        ], set()
    if kind == "fence":
        body = draw(st.lists(st.one_of(_line, _line.map(lambda s: "# " + s)), max_size=3))
        closed = draw(st.booleans())
        return ["```", *body, *(["```"] if closed else [])], set()
    cells = draw(st.lists(st.lists(_word, min_size=2, max_size=2), min_size=1, max_size=3))
    rows = ["| h1 | h2 |", "|---|---|", *(f"| {a} | {b} |" for a, b in cells)]
    return rows, set()


@settings(max_examples=200, deadline=None)
@given(st.lists(_element(), min_size=1, max_size=12), st.booleans())
def test_every_non_blank_line_is_in_a_block_or_heading(
    elements: list[tuple[list[str], set[int]]], with_front_matter: bool
) -> None:
    lines: list[str] = ["---", "title: Doc", "---"] if with_front_matter else []
    skip = set(range(len(lines)))
    for element_lines, headings in elements:
        if lines:
            lines.append("")
        skip.update(len(lines) + h for h in headings)
        lines.extend(element_lines)
        if element_lines[0] == "```" and (element_lines[-1] != "```" or len(element_lines) == 1):
            break  # an unclosed fence swallows the rest
    src = "\n".join(lines) + "\n"
    _, sections = _parse(src)
    _check_invariants(src, sections)
    spans = [(b.char_start, b.char_end) for s in sections for b in s.blocks]
    pos = 0
    for number, line in enumerate(lines):
        start, end = pos, pos + len(line)
        pos = end + 1
        if number in skip or not line.strip():
            continue
        assert any(a <= start and end <= b for a, b in spans), (number, line, src)


def test_a_code_block_of_unicode_line_separators_is_not_a_block() -> None:
    # Found by the input fuzzer: U+2028 is whitespace to Python but text to markdown-it.
    text = "# Title\n\n    \u2028\n\nReal text.\n"
    _, sections = parse_markdown(text, fallback_title="t")
    spans = [text[b.char_start : b.char_end] for s in sections for b in s.blocks]
    assert spans == ["Real text."]
