"""API replies as a plain client reads them (issue 30, item 10).

No mode banner in the text (the service hands it on as data: the door contract checks the
API leaves it out), no HTML entities or Markdown escapes,
citations numbered from [1] in the order they are shown, viewer links that carry the
passage. `ReplyText` turns the neutralised answer deltas into that text as they stream.
"""

from __future__ import annotations

from assistant.api.protocol import source_entries, sources_text
from assistant.api.reply import ReplyText
from assistant.types import Answer, Citation
from tests.support.hit_factory import make_hit

LOANS = make_hit(1, "Emergency loans carry 12% interest a year.", source="loans.md")
LEAVE = make_hit(2, "Staff get 21 days of annual leave.", source="leave.md")
PERKS = make_hit(
    3,
    "Staff get a gym allowance.",
    source="perks.md",
    title="Benefits & Perks",
    heading_path=("Benefits & Perks", "Gym <b>allowance</b>"),
)


def streamed(deltas: list[str], sources: int = 3) -> tuple[str, ReplyText]:
    reply = ReplyText(sources=sources)
    return "".join(reply.feed(d) for d in deltas) + reply.finish(), reply


def test_a_text_that_only_starts_like_the_banner_is_kept() -> None:
    text, _ = streamed(["Extracted ", "figures show [1]."])
    assert text == "Extracted figures show [1]."


def test_document_text_reads_plain_without_entities_or_escapes() -> None:
    text, _ = streamed(["From Benefits &amp; Perks\\: staff get ", "a gym \\*allowance\\* [3]."])
    assert text == "From Benefits & Perks: staff get a gym *allowance* [1]."


def test_unescaped_document_text_makes_no_image_link_or_html() -> None:
    text, _ = streamed(
        ["See \\!\\[logo\\]\\(http\\://evil.example/t.png\\) &lt;b&gt;now&lt;/b&gt; [1]."]
    )
    assert text == "See logo now [1]."


def test_citations_are_numbered_from_one_in_the_order_shown() -> None:
    text, reply = streamed(["Leave is 21 d", "ays [", "2]. Gym [3]", " and leave [2]."])
    assert text == "Leave is 21 days [1]. Gym [2] and leave [1]."
    assert reply.numbers() == {2: 1, 3: 2, 1: 3}  # the uncited source comes last


def test_a_marker_to_no_source_and_an_escaped_one_keep_their_number() -> None:
    text, reply = streamed(["Gym [3]; [7] and the document's \\[2\\] stay."])
    assert text == "Gym [1]; [7] and the document's [2] stay."
    assert reply.numbers() == {3: 1, 1: 2, 2: 3}


def test_the_checked_text_is_numbered_as_the_stream_was() -> None:
    _, reply = streamed(["Gym [3], leave [2]."])
    assert reply.renumbered("Gym [3].") == "Gym [1]."


def test_the_sources_are_listed_in_the_new_order_as_plain_text() -> None:
    answer = Answer(
        "q",
        "Leave [2], gym [3].",
        (LOANS, LEAVE, PERKS),
        (Citation(2, LEAVE), Citation(3, PERKS)),
    )
    entries = source_entries(answer, public_url="", numbers={2: 1, 3: 2, 1: 3})
    assert [(e["n"], e["source"], e["cited"]) for e in entries] == [
        (1, "leave.md", True),
        (2, "perks.md", True),
        (3, "loans.md", False),
    ]
    listed = sources_text(entries).splitlines()[-2:]
    assert listed[0].startswith("- [1] Leave Policy — Annual leave")
    assert listed[1].startswith("- [2] Benefits & Perks — Gym allowance ·")


def test_viewer_links_carry_the_cited_passage() -> None:
    answer = Answer("q", "Emergency loans cost 12% interest [1].", (LOANS,), (Citation(1, LOANS),))
    (entry,) = source_entries(answer, public_url="https://policies.example.org")
    assert (
        entry["path"]
        == "/doc/loans.md?passage=Emergency%20loans%20carry%2012%25%20interest%20a%20year.#cited"
    )
    assert entry["url"] == "https://policies.example.org" + entry["path"]


def test_a_link_split_across_deltas_streams_as_the_whole_text_reads() -> None:
    deltas = ["See [the ", "claim form](http", "://x.example/f) and <b ", "class=x>now</b> [2]."]
    text, _ = streamed(deltas)
    assert text == ReplyText(sources=3).renumbered("".join(deltas))
    assert text == "See the claim form and now [1]."


def test_an_escaped_image_split_across_deltas_never_becomes_an_image() -> None:
    deltas = ["See \\!\\[our ", "logo\\]\\(http\\://evil.example/t.png\\) ", "now [1]."]
    text, _ = streamed(deltas)
    assert text == "See our logo now [1]."
