"""Sources and trace Markdown: document text stays inert, links point at the viewer."""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from assistant.types import Answer, Citation
from assistant.web.format import doc_link, escape_markdown, sources_markdown, trace_markdown
from tests.support.ui_fakes import loan_hit

_md = MarkdownIt("commonmark", {"html": True})


def _text_of(rendered: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip()


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=80))
def test_escaped_text_renders_as_itself_without_markup(text: str) -> None:
    line = " ".join(text.split())
    rendered = _md.render("> " + escape_markdown(line))

    for tag in ("<a ", "<img", "<script", "<em>", "<strong>", "<code>", "<h1", "<table"):
        assert tag not in rendered
    assert _text_of(rendered) == line.strip()


def test_hostile_snippet_cannot_make_links_or_images() -> None:
    hit = loan_hit(
        body="![x](https://evil.example/a.png) <img src=https://e.example/b> [c](javascript:1)"
    )
    answer = Answer("q", "see [1]", (hit,), (Citation(1, hit),))

    rendered = _md.render(sources_markdown(answer))

    assert "<img" not in rendered
    assert rendered.count("<a ") == 1  # only our own "open section" link
    assert 'href="/doc/loan-policy.md#interest"' in rendered


def test_snippet_shows_bold_faq_questions_as_plain_text() -> None:
    hit = loan_hit(body="**Q: Can I withdraw my deposits?** No. Deposits secure loans.")
    answer = Answer("q", "see [1]", (hit,), (Citation(1, hit),))

    text = _text_of(_md.render(sources_markdown(answer)))

    assert "Q: Can I withdraw my deposits? No. Deposits secure loans." in text
    assert "*" not in text


def test_sources_list_cited_first_and_report_invalid_numbers() -> None:
    first = loan_hit(rank=1, anchor="interest")
    second = loan_hit(rank=2, anchor="limits", heading_path=("Loan Policy", "Limits"), page=3)
    answer = Answer(
        "q", "x [2]", (first, second), (Citation(2, second),), invalid_citation_numbers=(7,)
    )

    text = sources_markdown(answer)

    # Numbered as the chat shows the markers: the first cited source is [1].
    assert "**[1] Loan Policy** — [open section](/doc/loan-policy.md#limits)" in text
    assert "[2] Loan Policy**" not in text
    assert "Also retrieved, not cited:* \\[2\\] Loan Policy — Interest" in text
    assert "page 3" in text
    assert "\\[7\\]" in text
    assert "[2] Loan Policy** — [open section](/doc/loan-policy.md#interest)" in sources_markdown(
        answer, include_uncited=True
    )


def test_uncited_answer_still_lists_what_was_searched() -> None:
    hit = loan_hit()
    text = sources_markdown(Answer("q", "no markers", (hit,), ()))
    assert "[1] Loan Policy" in text
    assert "not cited" in text


def test_doc_link_quotes_paths_and_anchors() -> None:
    hit = loan_hit(source="hr/leave policy (2025).md", anchor="annual-leave")
    assert doc_link(hit) == "/doc/hr/leave%20policy%20%282025%29.md#annual-leave"


def test_trace_is_a_fence_that_backticks_cannot_break() -> None:
    text = trace_markdown(
        question="what about ```evil```?",
        query="q",
        lines=("question: what about ```evil```?", "prompt: 812 tokens"),
        timings={"first token": 0.0123},
    )

    rendered = _md.render(text)
    assert rendered.startswith("<pre><code")
    assert rendered.count("<pre>") == 1
    assert text.count("question:") == 1
    assert "first token: 12 ms" in text


def test_unsupported_statements_are_flagged_for_the_reader() -> None:
    hit = loan_hit()
    answer = Answer(
        "q",
        "Loans cost 99% [1].",
        (hit,),
        (Citation(1, hit),),
        unsupported_sentences=("Loans cost 99% [1].",),
    )

    text = sources_markdown(answer)

    assert "Check these statements" in text
    assert "> Loans cost 99% \\[1\\]." in text
    assert "Check these statements" not in sources_markdown(
        Answer("q", "x [1]", (hit,), (Citation(1, hit),))
    )


def test_withheld_statements_are_listed_as_withheld_not_as_to_check() -> None:
    hit = loan_hit()
    # Grounded only replaced the sentence by a quote: it is no longer in the answer.
    answer = Answer(
        "q",
        "“Loans carry 12% per annum.” [1]",
        (hit,),
        (Citation(1, hit),),
        unsupported_sentences=("Loans cost 99% [1].",),
    )

    text = sources_markdown(answer)

    assert "Withheld from the answer" in text
    assert "> Loans cost 99% \\[1\\]." in text
    assert "Check these statements" not in text


@pytest.mark.parametrize("text", ["-", "- not a list", "+ x", "12. not a list", "=", "---"])
def test_line_start_markers_stay_text(text: str) -> None:
    rendered = _md.render("> " + escape_markdown(text))
    assert "<li" not in rendered
    assert "<hr" not in rendered
    assert _text_of(rendered) == text


def test_escaped_text_cannot_be_autolinked() -> None:
    # Gradio's renderer links bare URLs, www. hosts and e-mail addresses (GFM autolinks).
    shown = escape_markdown("see http://evil.example/x, www.evil.example or bob@evil.example")
    assert "http://" not in shown
    assert "www.evil" not in shown
    assert "bob@" not in shown
    assert html.unescape(re.sub(r"\\(.)", r"\1", shown)).startswith("see http://evil.example/x")
