"""An exported conversation reads as text: no HTML entities, no raw Markdown (issue 30, item 8)."""

from __future__ import annotations

import html
import re

from assistant.types import Answer, Citation
from assistant.web.format import sources_markdown
from assistant.web.history import conversation_html, conversation_markdown
from tests.support.hit_factory import make_hit


def _history() -> list[dict[str, object]]:
    cited = make_hit(
        1,
        "Benefits & perks: interest at 12% per annum.",
        source="benefits.md",
        heading_path=("Benefits & Perks", "Loans > Rates"),
        title="Benefits & Perks",
    )
    other = make_hit(2, "Travel is paid.", source="travel.md", heading_path=("Travel", "Per Diem"))
    answer = Answer("rate?", "Interest is 12% [1].", (cited, other), (Citation(1, cited),))
    sources = sources_markdown(answer)
    return [
        {"role": "user", "content": "What is the rate? <b>now</b>"},
        {"role": "assistant", "content": answer.text},
        {"role": "assistant", "content": sources, "metadata": {"title": "1 source: A &gt; B"}},
    ]


def _shown_text(page: str) -> str:
    """Return what a browser shows of ``page``: tags dropped, entities read."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page.split("</style>", 1)[1]))


def test_the_markdown_export_holds_no_html_entities() -> None:
    exported = conversation_markdown(_history(), base_url="http://chat.example/", title="t")
    assert "Benefits & Perks" in exported
    assert "Loans > Rates" in exported
    assert "### 1 source: A > B" in exported
    assert not re.search(r"&(amp|lt|gt|quot|#39);", exported), exported


def test_the_html_export_shows_no_entities_and_no_raw_markdown() -> None:
    page = conversation_html(_history(), base_url="http://chat.example/", title="t")
    shown = _shown_text(page)
    assert "Benefits & Perks" in shown
    assert "Loans > Rates" in shown
    assert "1 source: A > B" in shown
    assert "<b>now</b>" in shown  # the question stays text
    assert "<em>Also retrieved, not cited:</em>" in page
    for raw in ("&gt;", "&amp;", "*Also", "**", "\\["):
        assert raw not in shown, (raw, shown)
