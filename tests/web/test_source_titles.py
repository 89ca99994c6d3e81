"""A front-matter title with line breaks stays one bold line in the Sources list (D15)."""

from __future__ import annotations

import re
from pathlib import Path

from markdown_it import MarkdownIt

from assistant.documents.loading import load_document
from assistant.types import Answer, Citation
from assistant.web.format import sources_markdown
from tests.support.hit_factory import make_hit


def test_a_multi_line_front_matter_title_keeps_its_sources_entry_on_one_line(
    tmp_path: Path,
) -> None:
    """D15: a title with line breaks renders as one bold title line in Sources."""
    front = '---\ntitle: "Leave\\n\\nRules *for*\\n  staff"\n---\n'
    (tmp_path / "x.md").write_text(
        front + "# Leave rules\n\nStaff get 25 days.\n", encoding="utf-8"
    )
    document = load_document(tmp_path / "x.md", root=tmp_path, source="x.md")
    assert "\n" in document.meta.title  # the loader keeps what the file says
    hit = make_hit(1, "Staff get 25 days.", source="x.md", title=document.meta.title)
    rendered = MarkdownIt("commonmark").render(
        sources_markdown(Answer("q", "Staff get 25 days [1].", (hit,), (Citation(1, hit),)))
    )
    strong = re.findall(r"<strong>(.*?)</strong>", rendered, flags=re.S)
    assert strong[0] == "[1] Leave Rules *for* staff"
    # One paragraph for the title and its facts, one for the quoted snippet: none spilled.
    assert rendered.count("<p>") == 2
    assert re.search(
        r"<p><strong>\[1\] Leave Rules[^<]*</strong>[^<]*<a [^>]*>open section", rendered
    )
