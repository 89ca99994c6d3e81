"""HTML loader: dropped elements, sections, blocks and offsets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from assistant.documents.base import Extracted
from assistant.documents.html import parse_html

PAGE = b"""<!doctype html><html><head><title>Leave Policy</title>
<style>p { color: red }</style><script>var secret = 1;</script></head><body>
<script>alert("x")</script><noscript>Enable JS</noscript><template><p>tpl</p></template>
<h1>Leave <em>Rules</em></h1><p>Intro <a href="x">link</a>, text.</p>
<div>Loose <b>bold</b> words<p>inside</p></div>
<h2>Sick leave</h2><ul><li>One<ul><li>Sub</li></ul></li><li>Two</li></ul>
<table><tr><th>Days</th><th>Pay</th></tr><tr><td>1-5</td><td>Full | half</td></tr></table>
<h3>Notes</h3><pre>line 1
  line 2</pre><!-- hidden comment --><blockquote><p>q1</p><p>q2</p></blockquote>
<h2>Annual leave</h2><p>Twenty days.</p>
</body></html>"""


def _parse(data: bytes = PAGE) -> Extracted:
    return parse_html(data, source="p.html", fallback_title="Fallback")


def _blocks(doc: Extracted) -> list[tuple[str, str, str]]:
    return [
        (s.heading_path[-1], b.kind, doc.text[b.char_start : b.char_end])
        for s in doc.sections
        for b in s.blocks
    ]


def test_scripts_styles_and_head_are_dropped() -> None:
    doc = _parse()
    for hidden in ("secret", "alert", "color", "Enable JS", "tpl", "hidden comment"):
        assert hidden not in doc.text


def test_sections_follow_headings_with_title_from_title_tag() -> None:
    doc = _parse()
    assert doc.meta.title == "Leave Policy"
    assert [s.heading_path for s in doc.sections] == [
        ("Leave Rules",),
        ("Leave Rules", "Sick leave"),
        ("Leave Rules", "Sick leave", "Notes"),
        ("Leave Rules", "Annual leave"),
    ]
    assert doc.text[doc.sections[1].char_start :].startswith("Sick leave\n")


def test_blocks_render_lists_tables_code_and_quotes() -> None:
    assert _blocks(_parse()) == [
        ("Leave Rules", "paragraph", "Intro link, text."),
        ("Leave Rules", "paragraph", "Loose bold words"),
        ("Leave Rules", "paragraph", "inside"),
        ("Sick leave", "list_item", "- One\n  - Sub"),
        ("Sick leave", "list_item", "- Two"),
        ("Sick leave", "table", "| Days | Pay |\n| --- | --- |\n| 1-5 | Full \\| half |"),
        ("Notes", "code", "line 1\n  line 2"),
        ("Notes", "other", "q1 q2"),
        ("Annual leave", "paragraph", "Twenty days."),
    ]


def test_title_falls_back_to_h1_then_file_name() -> None:
    assert _parse(b"<h1>Main</h1><p>x</p>").meta.title == "Main"
    no_h1 = _parse(b"<h2>Part</h2><p>x</p>")
    assert no_h1.meta.title == "Fallback"
    assert no_h1.sections[0].heading_path == ("Fallback", "Part")


def test_meta_charset_is_honoured() -> None:
    data = '<meta charset="windows-1252"><p>Café</p>'.encode("cp1252")
    assert "Café" in _parse(data).text


_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
_words = st.lists(_word, min_size=1, max_size=6).map(" ".join)
_element = st.tuples(
    st.sampled_from(["h1", "h2", "h3", "p", "li", "pre", "blockquote", "div", "span"]), _words
)


@settings(max_examples=100, deadline=None)
@given(st.lists(_element, min_size=1, max_size=15))
def test_every_element_text_lands_in_a_block_or_heading(elements: list[tuple[str, str]]) -> None:
    html = "".join(f"<{tag}>{words}</{tag}>" for tag, words in elements).encode()
    doc = _parse(html)
    spans = [(b.char_start, b.char_end) for s in doc.sections for b in s.blocks]
    spans += [(s.char_start, s.char_start + len(s.heading_path[-1])) for s in doc.sections]
    covered = " ".join(doc.text[a:b] for a, b in spans)
    for _, words in elements:
        assert words in covered
    previous = 0
    for section in doc.sections:
        for block in section.blocks:
            assert previous <= block.char_start < block.char_end <= section.char_end
            previous = block.char_end


def test_site_chrome_is_dropped_and_article_headers_kept() -> None:
    page = b"""<html><head><title>Terms</title></head><body>
    <header><a href="/">Home</a> | <a href="/p">Policies</a></header>
    <div role="navigation"><a href="/a">A-Z index</a></div>
    <div class="cookie">We use cookies.</div>
    <main><article><header><h1>Terms</h1><p>Issued by Legal.</p></header>
    <nav><aside>Jump to section</aside></nav>
    <h2>Use</h2><p>Use it well.</p><aside>Related: fees</aside>
    <footer><p>Approved by the Board.</p></footer></article></main>
    <div role="contentinfo">Contact us</div>
    <footer><p>&copy; 2025 Example Ltd</p></footer></body></html>"""
    doc = _parse(page)
    for chrome in ("Home", "A-Z index", "cookies", "Jump to", "Related", "Contact", "2025"):
        assert chrome not in doc.text
    for kept in ("Issued by Legal.", "Use it well.", "Approved by the Board."):
        assert kept in doc.text
    assert [s.heading_path for s in doc.sections] == [("Terms",), ("Terms", "Use")]


def test_without_main_the_body_minus_chrome_is_read() -> None:
    page = b"<body><nav>Menu</nav><h1>T</h1><p>Body text.</p><footer>Foot</footer></body>"
    assert _parse(page).text == "T\n\nBody text.\n"
