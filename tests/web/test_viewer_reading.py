"""Issue 30 (4): the viewer marks the whole cited sentence, fits a phone, and has one script."""

from __future__ import annotations

import base64
import hashlib
import re

from assistant.web.marking import PROBE_CHARS, mark_passage
from assistant.web.viewer import CSP, _page

SENTENCE = (
    "Claims older than 60 days are not paid unless the Finance Manager approves a late "
    "claim for a good reason."
)


def _marked_text(page: str) -> str:
    return "".join(re.findall(r"<mark[^>]*>(.*?)</mark>", page))


def test_the_whole_cited_sentence_is_marked_not_the_first_80_characters() -> None:
    page = f"<p>Claims are approved by a manager. {SENTENCE} Travel is booked ahead.</p>"
    assert len(SENTENCE) > PROBE_CHARS
    marked = mark_passage(page, SENTENCE)
    assert marked is not None
    assert _marked_text(marked) == SENTENCE


def test_the_mark_never_ends_inside_a_word() -> None:
    page = "<p>The rate is KES 40 per kilometre for a private car on duty.</p>"
    # The passage as the chat has it may stop short of the page's wording.
    marked = mark_passage(page, "The rate is KES 4")
    assert marked is not None
    assert _marked_text(marked) == "The rate is KES 40"


def test_a_sentence_across_inline_markup_is_marked_whole() -> None:
    page = f"<p>{SENTENCE[:50]}<strong>{SENTENCE[50:70]}</strong>{SENTENCE[70:]}</p>"
    marked = mark_passage(page, SENTENCE)
    assert marked is not None
    assert _marked_text(marked) == SENTENCE


def test_the_page_has_a_viewport_and_only_its_own_hashed_script() -> None:
    page = _page("Doc", "<p>x</p>")
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    (script,) = re.findall(r"<script>(.*?)</script>", page, re.S)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in CSP
    assert "unsafe-inline" not in CSP.split("script-src")[1]
    assert "default-src 'none'" in CSP
