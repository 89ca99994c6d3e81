"""Ingest is incremental, exact and safe: users re-run it without thinking."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from assistant.config import Settings, StoreSettings
from assistant.errors import IndexBusyError, IndexMismatchError, IndexNotFoundError
from assistant.index.chroma import ChromaIndex
from assistant.index.ingest import ingest
from assistant.index.lock import writer_lock
from assistant.index.reader import IndexReader
from tests.conftest import FakeEmbedder

LOANS = (
    """# Loan Policy

## Emergency Loans

Emergency loans carry interest of 12% per annum on a reducing balance.
They are repaid within twelve months.

## Development Loans

Development loans are repaid within 48 months at 14% per annum.
"""
    + "\n".join(
        f"Clause {i}: a development loan for project {i} needs two guarantors who are members."
        for i in range(40)
    )
    + "\n"
)

LEAVE = """---
title: Staff Leave Policy
effective_date: 2026-01-01
tags: [hr, leave]
---
# Leave

Staff receive 24 working days of annual leave each year.
"""


def write_corpus(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "loans.md").write_text(LOANS, encoding="utf-8")
    (root / "hr").mkdir(exist_ok=True)
    (root / "hr" / "leave.md").write_text(LEAVE, encoding="utf-8")
    return root


def settings_for(index: Path) -> Settings:
    return replace(Settings(), store=StoreSettings(path=index))


def state(settings: Settings, embedder: FakeEmbedder) -> dict[str, tuple[str, str]]:
    """Every stored chunk: id -> (text, doc_key), as a fresh reader sees it."""
    index = ChromaIndex(
        settings.store, embedder_identity=embedder.identity, dimension=embedder.dimension
    )
    snapshot = index.load_snapshot()
    return {c.chunk_id: (c.text, c.source) for c in snapshot.chunks}


def test_first_ingest_adds_every_document(tmp_path: Path, fake_embedder: FakeEmbedder) -> None:
    docs = write_corpus(tmp_path / "docs")
    settings = settings_for(tmp_path / "index")

    report = ingest([docs], settings=settings, embedder=fake_embedder)

    assert sorted(report.added) == ["hr/leave.md", "loans.md"]
    assert report.problems == ()
    stored = state(settings, fake_embedder)
    assert report.chunks_written == len(stored) >= 2
    assert any("12% per annum" in text for text, _ in stored.values())


def test_second_run_embeds_nothing_and_changes_nothing(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "docs")
    settings = settings_for(tmp_path / "index")
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    before = state(settings, FakeEmbedder())

    counting = FakeEmbedder()
    report = ingest([docs], settings=settings, embedder=counting)

    assert counting.embedded == 0
    assert sorted(report.unchanged) == ["hr/leave.md", "loans.md"]
    assert report.chunks_written == report.chunks_deleted == 0
    assert state(settings, counting) == before


def test_edited_document_is_replaced_without_stale_chunks(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "docs")
    settings = settings_for(tmp_path / "index")
    embedder = FakeEmbedder()
    ingest([docs], settings=settings, embedder=embedder)

    (docs / "loans.md").write_text("# Loan Policy\n\nAll loans now cost 9% per annum.\n")
    report = ingest([docs], settings=settings, embedder=embedder)

    assert report.changed == ("loans.md",)
    assert report.unchanged == ("hr/leave.md",)
    texts = [text for text, source in state(settings, embedder).values() if source == "loans.md"]
    assert len(texts) == 1
    assert "9% per annum" in texts[0]
    assert report.chunks_deleted >= 1


def test_quick_read_of_a_cleanly_committed_index_equals_a_row_by_row_check(
    tmp_path: Path,
) -> None:
    """After a commit, re-ingest reads one row per document; it must see what every row says."""
    docs = write_corpus(tmp_path / "docs")
    settings = settings_for(tmp_path / "index")
    embedder = FakeEmbedder()
    ingest([docs], settings=settings, embedder=embedder)
    (docs / "loans.md").write_text("# Loan Policy\n\nAll loans now cost 9% per annum.\n")
    ingest([docs], settings=settings, embedder=embedder)

    def open_index() -> ChromaIndex:
        return ChromaIndex(
            settings.store, embedder_identity=embedder.identity, dimension=embedder.dimension
        )

    quick = open_index().stored_documents()
    open_index().begin_write()  # what a run that dies before its commit leaves
    row_by_row = open_index().stored_documents()

    assert quick == row_by_row
    assert quick["loans.md"].chunk_count == 1
    assert quick["hr/leave.md"].root == str(docs.resolve())


def test_an_unfinished_mark_with_nothing_to_repair_is_cleared_by_the_next_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An index without the clean mark (older version, or a run killed before writing)
    is checked row by row once; when nothing needs repair the next run is quick again."""
    docs = write_corpus(tmp_path / "docs")
    settings = settings_for(tmp_path / "index")
    embedder = FakeEmbedder()
    ingest([docs], settings=settings, embedder=embedder)
    ChromaIndex(
        settings.store, embedder_identity=embedder.identity, dimension=embedder.dimension
    ).begin_write()
    slow_check = "checking every stored chunk"

    with caplog.at_level("INFO", logger="assistant.index.chroma"):
        first = ingest([docs], settings=settings, embedder=embedder)
        assert slow_check in caplog.text
        caplog.clear()
        second = ingest([docs], settings=settings, embedder=embedder)
        assert slow_check not in caplog.text

    assert first.chunks_written == second.chunks_written == 0
    assert sorted(second.unchanged) == ["hr/leave.md", "loans.md"]


def test_deleted_file_is_removed_but_other_roots_are_kept(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "docs")
    other = tmp_path / "other"
    other.mkdir()
    (other / "fees.md").write_text("# Fees\n\nA statement costs 50 shillings.\n")
    settings = settings_for(tmp_path / "index")
    embedder = FakeEmbedder()
    ingest([docs], settings=settings, embedder=embedder)
    ingest([other], settings=settings, embedder=embedder)
    (docs / "loans.md").unlink()

    report = ingest([docs], settings=settings, embedder=embedder)

    assert report.removed == ("loans.md",)
    sources = {source for _, source in state(settings, embedder).values()}
    assert sources == {"hr/leave.md", "fees.md"}

    pruned = ingest([docs], settings=settings, embedder=embedder, prune=True)
    assert pruned.removed == ("fees.md",)
    assert {source for _, source in state(settings, embedder).values()} == {"hr/leave.md"}


def test_broken_file_is_reported_and_its_stored_version_kept(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "docs")
    settings = settings_for(tmp_path / "index")
    embedder = FakeEmbedder()
    ingest([docs], settings=settings, embedder=embedder)
    before = {k: v for k, v in state(settings, embedder).items() if v[1] == "loans.md"}

    (docs / "loans.md").write_bytes(b"\x00\x01\x02binary\xff\xfe" * 50)
    (docs / "new.md").write_text("# New\n\nMembers may borrow three times their savings.\n")
    report = ingest([docs], settings=settings, embedder=embedder)

    assert [p.source for p in report.problems] == ["loans.md"]
    assert report.added == ("new.md",)
    after = state(settings, embedder)
    assert {k: v for k, v in after.items() if v[1] == "loans.md"} == before
    assert any(source == "new.md" for _, source in after.values())


def test_strict_writes_nothing_when_a_file_fails(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "docs")
    (docs / "binary.md").write_bytes(b"# T\n\x00\x01\x02")
    settings = settings_for(tmp_path / "index")

    report = ingest([docs], settings=settings, embedder=FakeEmbedder(), strict=True)

    assert [p.source for p in report.problems] == ["binary.md"]
    assert not ChromaIndex(settings.store, embedder_identity="fake:bow64", dimension=64).exists()


REDIRECT = "---\nredirect_to: /site-policy/github-terms\ntitle: Old terms\n---\n"


def test_files_without_text_are_skipped_not_failed_even_under_strict(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "docs")
    (docs / "empty.md").write_text("")
    (docs / "redirect.md").write_text(REDIRECT)
    settings = settings_for(tmp_path / "index")

    report = ingest([docs], settings=settings, embedder=FakeEmbedder(), strict=True)

    assert report.problems == ()
    assert [s.source for s in report.skipped] == ["empty.md", "redirect.md"]
    assert "no text" in report.skipped[1].reason
    assert sorted(report.added) == ["hr/leave.md", "loans.md"]
    assert {source for _, source in state(settings, FakeEmbedder()).values()} == {
        "hr/leave.md",
        "loans.md",
    }


def test_a_document_that_becomes_empty_loses_its_stored_chunks(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "docs")
    settings = settings_for(tmp_path / "index")
    embedder = FakeEmbedder()
    ingest([docs], settings=settings, embedder=embedder)
    stored = sum(1 for _, source in state(settings, embedder).values() if source == "loans.md")

    (docs / "loans.md").write_text(REDIRECT)
    plan = ingest([docs], settings=settings, embedder=embedder, dry_run=True)
    report = ingest([docs], settings=settings, embedder=embedder)

    assert [s.source for s in plan.skipped] == ["loans.md"]
    assert plan.chunks_deleted == stored
    assert [s.source for s in report.skipped] == ["loans.md"]
    assert report.changed == ()
    assert report.problems == ()
    assert report.chunks_deleted == stored >= 2
    assert {source for _, source in state(settings, embedder).values()} == {"hr/leave.md"}


class NarrowEmbedder(FakeEmbedder):
    """Reads only 40 of its tokens (one per word, plus two), far below the chunk budget."""

    @property
    def max_input_tokens(self) -> int:
        return 40


def test_chunks_are_cut_to_what_the_embedder_reads(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "docs")
    settings = settings_for(tmp_path / "index")
    narrow, wide = NarrowEmbedder(), FakeEmbedder()

    report = ingest([docs], settings=settings, embedder=narrow)
    texts = [text for text, _ in state(settings, narrow).values()]
    wide_report = ingest([docs], settings=settings_for(tmp_path / "wide"), embedder=wide)

    assert report.chunks_oversize == 0
    assert max(narrow.count_tokens(texts)) <= 40
    assert report.chunks_written > wide_report.chunks_written
    assert any("12% per annum" in text for text in texts)


def test_dry_run_plans_without_writing(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "docs")
    settings = settings_for(tmp_path / "index")

    report = ingest([docs], settings=settings, embedder=FakeEmbedder(), dry_run=True)

    assert report.dry_run
    assert sorted(report.added) == ["hr/leave.md", "loans.md"]
    assert report.chunks_written >= 2
    assert not (tmp_path / "index").exists()


def test_other_embedding_model_fails_fast_with_a_way_out(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "docs")
    settings = settings_for(tmp_path / "index")
    ingest([docs], settings=settings, embedder=FakeEmbedder(64))

    with pytest.raises(IndexMismatchError, match="--rebuild"):
        ingest([docs], settings=settings, embedder=FakeEmbedder(32))

    report = ingest([docs], settings=settings, embedder=FakeEmbedder(32), rebuild=True)
    assert sorted(report.added) == ["hr/leave.md", "loans.md"]


def test_second_writer_is_refused_while_one_holds_the_index(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "docs")
    settings = settings_for(tmp_path / "index")
    with writer_lock(settings.store.path, wait=False), pytest.raises(IndexBusyError):
        ingest([docs], settings=settings, embedder=FakeEmbedder())


def test_reader_sees_new_ingest_and_never_a_deleted_chunk(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "docs")
    settings = settings_for(tmp_path / "index")
    embedder = FakeEmbedder()
    reader = IndexReader(settings.store, embedder_identity=embedder.identity, dimension=64)
    with pytest.raises(IndexNotFoundError, match=r"ingest\.py"):
        reader.snapshot()
    ingest([docs], settings=settings, embedder=embedder)
    first = reader.snapshot()
    assert reader.snapshot() is first  # unchanged index: no reload

    (docs / "loans.md").unlink()
    ingest([docs], settings=settings, embedder=embedder)

    assert {c.source for c in reader.snapshot().chunks} == {"hr/leave.md"}


def test_chunk_metadata_round_trips(tmp_path: Path, fake_embedder: FakeEmbedder) -> None:
    docs = write_corpus(tmp_path / "docs")
    settings = settings_for(tmp_path / "index")
    ingest([docs], settings=settings, embedder=fake_embedder)
    index = ChromaIndex(settings.store, embedder_identity=fake_embedder.identity, dimension=64)

    snapshot = index.load_snapshot()

    leave = snapshot.docs["hr/leave.md"]
    assert leave.title == "Staff Leave Policy"
    assert leave.effective_date == "2026-01-01"
    assert leave.tags == ("hr", "leave")
    text = (docs / "loans.md").read_text()
    for chunk in snapshot.chunks:
        if chunk.source == "loans.md":
            assert text[chunk.char_start : chunk.char_end] == chunk.body
            assert chunk.heading_path[0] == "Loan Policy"
    assert snapshot.vectors.shape == (len(snapshot.chunks), 64)
