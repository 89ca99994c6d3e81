import dataclasses

import numpy as np
import pytest

from assistant.errors import IndexMismatchError
from assistant.types import DocMeta, IndexSnapshot, SearchFilters, compose_chunk_text
from tests.support.retrieval_helpers import (
    FILLER,
    FakeEmbedder,
    Section,
    build_document,
    make_retriever,
    make_snapshot,
    policy_corpus,
)

CODE_QUERY = "What does CR-47 cover?"
PARAPHRASE_QUERY = "Can I be reimbursed for a cancelled journey?"


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def snapshot(embedder: FakeEmbedder) -> IndexSnapshot:
    chunks, docs = policy_corpus()
    return make_snapshot(chunks, docs, embedder=embedder)


def top_source(snapshot: IndexSnapshot, embedder: FakeEmbedder, query: str, mode: str) -> str:
    hits = make_retriever(snapshot, embedder, mode=mode).search(query).hits
    return hits[0].chunk.breadcrumb


def test_hybrid_finds_exact_code_that_dense_misses(
    snapshot: IndexSnapshot, embedder: FakeEmbedder
) -> None:
    assert top_source(snapshot, embedder, CODE_QUERY, "dense") == "Fees > Extras"
    assert top_source(snapshot, embedder, CODE_QUERY, "hybrid") == "Fees > Card replacement"


def test_hybrid_finds_paraphrase_that_lexical_misses(
    snapshot: IndexSnapshot, embedder: FakeEmbedder
) -> None:
    assert top_source(snapshot, embedder, PARAPHRASE_QUERY, "lexical") == "Tax > Taxable benefits"
    hybrid = top_source(snapshot, embedder, PARAPHRASE_QUERY, "hybrid")
    assert hybrid == "Expenses > Refund of trip costs"


def test_lexical_mode_does_not_embed_the_query(
    snapshot: IndexSnapshot, embedder: FakeEmbedder
) -> None:
    calls = embedder.calls
    hits = make_retriever(snapshot, embedder, mode="lexical").search(CODE_QUERY).hits
    assert embedder.calls == calls
    assert [h.chunk.source for h in hits] == ["finance/fees.md"]


@pytest.mark.parametrize(
    ("filters", "allowed"),
    [
        (SearchFilters(sources=("hr/general.md",)), {"hr/general.md"}),
        (SearchFilters(sources=("hr/tax.md", "finance/fees.md")), {"hr/tax.md", "finance/fees.md"}),
        (SearchFilters(tags=("travel",)), {"finance/expenses.md"}),
        (
            SearchFilters(tags=("hr", "travel")),
            {"hr/general.md", "hr/tax.md", "finance/expenses.md"},
        ),
        (
            SearchFilters(date_from="2023-01-01"),
            {"finance/fees.md", "finance/expenses.md", "hr/tax.md"},
        ),
        (SearchFilters(date_to="2023-12-31"), {"finance/expenses.md", "hr/general.md"}),
        (
            SearchFilters(date_from="2023-01-01", date_to="2024-12-31", tags=("finance",)),
            {"finance/fees.md", "finance/expenses.md"},
        ),
    ],
)
@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
def test_filters_exclude_rows(
    snapshot: IndexSnapshot,
    embedder: FakeEmbedder,
    filters: SearchFilters,
    allowed: set[str],
    mode: str,
) -> None:
    retriever = make_retriever(snapshot, embedder, mode=mode)
    for query in (CODE_QUERY, PARAPHRASE_QUERY, "office parking fees refund"):
        result = retriever.search(query, k=20, filters=filters)
        assert {h.chunk.source for h in result.hits} <= allowed
    if mode != "lexical":  # dense always returns every eligible row at k=20
        assert {h.chunk.source for h in result.hits} == allowed


def test_filter_matching_nothing_returns_no_hits(
    snapshot: IndexSnapshot, embedder: FakeEmbedder
) -> None:
    result = make_retriever(snapshot, embedder).search(
        CODE_QUERY, filters=SearchFilters(sources=("nope.md",))
    )
    assert result.hits == ()
    assert result.no_good_match


def versioned_corpus(
    embedder: FakeEmbedder, *, old_meta: DocMeta, new_meta: DocMeta
) -> IndexSnapshot:
    old = build_document(
        "leave-2020.md",
        "Leave",
        [
            Section(
                "Annual leave", ("Annual leave days: annual leave is twenty days of annual leave.",)
            )
        ],
    )
    new = build_document(
        "leave-2024.md",
        "Leave",
        [Section("Annual leave", ("Staff get twenty five days off per year.",))],
    )
    filler = build_document("general.md", "General", FILLER)
    return make_snapshot(
        old + new + filler,
        {"leave-2020.md": old_meta, "leave-2024.md": new_meta, "general.md": DocMeta("General")},
        embedder=embedder,
    )


@pytest.mark.parametrize(
    ("old_meta", "new_meta"),
    [
        (
            DocMeta("Leave", effective_date="2020-01-01"),
            DocMeta("Leave", effective_date="2024-01-01"),
        ),
        (DocMeta("Leave (old)"), DocMeta("Leave", supersedes="leave-2020.md")),
    ],
    ids=["same-title-older-date", "supersedes-field"],
)
@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
def test_superseded_version_ranks_after_current(
    embedder: FakeEmbedder, old_meta: DocMeta, new_meta: DocMeta, mode: str
) -> None:
    snapshot = versioned_corpus(embedder, old_meta=old_meta, new_meta=new_meta)
    # The old text repeats the query words, so on its own merits it would rank first.
    result = make_retriever(snapshot, embedder, mode=mode).search("annual leave days", k=5)
    sources = [h.chunk.source for h in result.hits]
    assert sources.index("leave-2024.md") < sources.index("leave-2020.md")
    flags = {h.chunk.source: h.superseded for h in result.hits}
    assert flags["leave-2020.md"]
    assert not flags["leave-2024.md"]
    assert any("superseded" in line for line in result.trace)


def test_overlapping_chunks_of_one_section_collapse(embedder: FakeEmbedder) -> None:
    (chunk,) = build_document(
        "a.md", "A", [Section("Refunds", ("Refund of trip costs is paid within thirty days.",))]
    )
    twin = dataclasses.replace(chunk, chunk_id="a.md#twin", char_start=chunk.char_start + 10)

    snapshot = make_snapshot([chunk, twin], {"a.md": DocMeta("A")}, embedder=embedder)
    result = make_retriever(snapshot, embedder).search("refund of trip costs")
    assert len(result.hits) == 1
    assert any("near-duplicates dropped" in line for line in result.trace)


def test_generation_change_rebuilds_and_removed_chunk_is_never_returned(
    embedder: FakeEmbedder,
) -> None:
    chunks, docs = policy_corpus()
    first = make_snapshot(chunks, docs, embedder=embedder, generation="g1")
    kept = [c for c in chunks if c.source != "finance/fees.md"]
    second = make_snapshot(
        kept,
        {s: m for s, m in docs.items() if s != "finance/fees.md"},
        embedder=embedder,
        generation="g2",
    )
    current = [first]
    retriever = make_retriever(first, embedder)
    retriever._source = lambda: current[0]  # the reader returns whatever was committed last
    assert retriever.search(CODE_QUERY).hits[0].chunk.source == "finance/fees.md"
    current[0] = second
    for mode_query in (CODE_QUERY, "insurance card charge", PARAPHRASE_QUERY):
        hits = retriever.search(mode_query, k=20).hits
        assert all(h.chunk.source != "finance/fees.md" for h in hits)
        assert len(hits) == len(kept)


def test_off_topic_question_is_no_good_match_but_still_lists_closest(
    snapshot: IndexSnapshot, embedder: FakeEmbedder
) -> None:
    retriever = make_retriever(snapshot, embedder, min_score=0.3)
    off = retriever.search("Quantum chromodynamics lattice gauge simulations")
    assert off.no_good_match
    assert off.hits
    on = retriever.search(PARAPHRASE_QUERY)
    assert not on.no_good_match


@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
def test_shown_scores_never_rise_down_the_list(
    snapshot: IndexSnapshot, embedder: FakeEmbedder, mode: str
) -> None:
    retriever = make_retriever(snapshot, embedder, mode=mode)
    for query in (CODE_QUERY, PARAPHRASE_QUERY, "insurance card charge", "parking permit"):
        scores = [h.score for h in retriever.search(query, k=10).hits if not h.superseded]
        assert scores == sorted(scores, reverse=True), (mode, query, scores)
        assert all(0 <= s <= 1 for s in scores)


def test_exact_code_match_counts_as_evidence_in_hybrid(
    snapshot: IndexSnapshot, embedder: FakeEmbedder
) -> None:
    hit = make_retriever(snapshot, embedder).search(CODE_QUERY).hits[0]
    assert hit.chunk.breadcrumb == "Fees > Card replacement"
    assert hit.lexical_score > 0
    assert 0 < hit.score <= 1


def test_hits_carry_metadata_scores_and_ranks(
    snapshot: IndexSnapshot, embedder: FakeEmbedder
) -> None:
    result = make_retriever(snapshot, embedder).search(PARAPHRASE_QUERY, k=3)
    assert [h.rank for h in result.hits] == [1, 2, 3]
    first = result.hits[0]
    assert (first.title, first.effective_date, first.tags) == (
        "Expenses",
        "2023-06-01",
        ("finance", "travel"),
    )
    assert all(0.0 <= h.score <= 1.0 for h in result.hits)
    assert any(line.startswith("dense top") for line in result.trace)
    assert any(line.startswith("lexical top") for line in result.trace)
    assert any(line.startswith("timings:") and "ms" in line for line in result.trace)


def test_k_defaults_to_settings_top_k(snapshot: IndexSnapshot, embedder: FakeEmbedder) -> None:
    assert len(make_retriever(snapshot, embedder, top_k=2).search("leave").hits) == 2
    assert len(make_retriever(snapshot, embedder, top_k=2).search("leave", k=5).hits) == 5


def test_empty_index_returns_no_good_match(embedder: FakeEmbedder) -> None:
    snapshot = make_snapshot([], {}, embedder=embedder)
    result = make_retriever(snapshot, embedder).search("anything")
    assert result.hits == ()
    assert result.no_good_match


def test_vectors_of_another_dimension_are_refused(embedder: FakeEmbedder) -> None:
    chunks, docs = policy_corpus()
    snapshot = IndexSnapshot("g", tuple(chunks), np.zeros((len(chunks), 8), np.float32), docs)
    with pytest.raises(IndexMismatchError, match="8-dimensional"):
        make_retriever(snapshot, embedder).search("leave")


def _speak_up_corpus(embedder: FakeEmbedder) -> IndexSnapshot:
    """A whistleblowing policy whose title and text never say "whistleblowing"."""
    chunks = build_document(
        "hr/whistleblowing-policy.md",
        "Speaking Up",
        [Section("Who to tell", ("Report concerns to the ethics officer in confidence.",))],
    )
    chunks += build_document(
        "finance/fees.md",
        "Fees",
        [Section("Statements", ("Report a wrong charge to the branch in thirty days.",))],
    )
    chunks += build_document("hr/general.md", "General", FILLER)
    docs = {
        "hr/whistleblowing-policy.md": DocMeta("Speaking Up"),
        "finance/fees.md": DocMeta("Fees"),
        "hr/general.md": DocMeta("General"),
    }
    return make_snapshot(chunks, docs, embedder=embedder)


@pytest.mark.parametrize("mode", ["hybrid", "lexical"])
def test_question_naming_a_policy_by_its_file_name_finds_it(
    embedder: FakeEmbedder, mode: str
) -> None:
    snapshot = _speak_up_corpus(embedder)
    question = "Where do I report under the whistleblowing policy?"
    found = make_retriever(snapshot, embedder, mode=mode).search(question).hits
    assert found[0].chunk.source == "hr/whistleblowing-policy.md"
    body_only = make_retriever(snapshot, embedder, mode=mode, title_weight=0.0)
    assert body_only.search(question).hits[0].chunk.source == "finance/fees.md"


def test_question_naming_a_document_title_missing_from_its_heading_paths_finds_it(
    embedder: FakeEmbedder,
) -> None:
    # The sponsors terms start with a section heading, so no chunk text carries the title.
    chunks = build_document(
        "terms/marketplace.md",
        "Marketplace Terms",
        [Section("Payouts", ("Payouts are made on the 1st of the month; payouts roll over.",))],
    )
    sponsors = build_document(
        "terms/additional.md",
        "Terms for Sponsored Developers",
        [Section("Payouts", ("Payouts are made on the 22nd of the month, net of any fees owed.",))],
    )
    for chunk in sponsors:
        path = chunk.heading_path[1:]
        text = compose_chunk_text(path, chunk.prefix, chunk.body)
        chunks.append(dataclasses.replace(chunk, heading_path=path, text=text))
    docs = {
        "terms/marketplace.md": DocMeta("Marketplace Terms"),
        "terms/additional.md": DocMeta("GitHub Sponsors Additional Terms"),
    }
    snapshot = make_snapshot(chunks, docs, embedder=embedder)
    question = "When are Sponsors payouts made?"
    hits = make_retriever(snapshot, embedder, mode="lexical").search(question).hits
    assert hits[0].chunk.source == "terms/additional.md"
    body_only = make_retriever(snapshot, embedder, mode="lexical", title_weight=0.0)
    assert body_only.search(question).hits[0].chunk.source == "terms/marketplace.md"


def test_a_date_filter_traces_each_document_date_and_where_it_came_from(
    embedder: FakeEmbedder,
) -> None:
    chunks, docs = policy_corpus()
    docs["hr/general.md"] = dataclasses.replace(docs["hr/general.md"], date_source="text")
    docs["hr/tax.md"] = dataclasses.replace(docs["hr/tax.md"], date_source="meta tag")
    docs["finance/fees.md"] = dataclasses.replace(docs["finance/fees.md"], effective_date="")
    retriever = make_retriever(make_snapshot(chunks, docs, embedder=embedder), embedder)
    result = retriever.search(CODE_QUERY, filters=SearchFilters(date_from="2023-01-01"))
    (line,) = [t for t in result.trace if t.startswith("dates: ")]
    assert "hr/general.md 2022-03-01 (text)" in line
    assert "hr/tax.md 2025-02-01 (meta tag)" in line
    assert "finance/fees.md undated" in line
    assert not [t for t in retriever.search(CODE_QUERY).trace if t.startswith("dates: ")]


def test_hybrid_prefers_the_chunk_holding_every_term_over_one_repeating_a_rare_term(
    embedder: FakeEmbedder,
) -> None:
    # The fake embedder does not see codes, so every chunk gets the same cosine:
    # BM25 decides, and it rewards repeating KX-7 more than also holding RQ-2.
    repeats, holds_both = (
        "Codes: KX-7 KX-7 KX-7 KX-7 are listed here for staff.",
        "Codes: KX-7 and RQ-2 are listed here for staff.",
    )
    chunks = build_document("it/keys.md", "Keys", [Section("Codes", (repeats, holds_both))])
    others = (
        "Codes: RQ-2 are listed here for staff.",
        "Codes: RQ-2 and RQ-5 are listed here for staff.",
        "Codes: RQ-2 are listed here for staff too.",
    )
    chunks += build_document("it/more.md", "Keys", [Section("Codes", others)])
    chunks += build_document("hr/general.md", "General", FILLER)
    docs = {s: DocMeta("Keys") for s in ("it/keys.md", "it/more.md")}
    snapshot = make_snapshot(
        chunks, docs | {"hr/general.md": DocMeta("General")}, embedder=embedder
    )
    question = "Which staff codes combine KX-7 with RQ-2?"
    plain = make_retriever(snapshot, embedder, coverage_weight=0.0).search(question).hits
    assert plain[0].chunk.body == repeats
    hits = make_retriever(snapshot, embedder).search(question).hits
    assert hits[0].chunk.body == holds_both
    assert hits[0].score > hits[1].score
