"""A file edited while an ingest reads it: the stored key is the key of the bytes parsed (D3)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from assistant.config import StoreSettings
from assistant.index import ingest as ingest_module
from assistant.index.chroma import ChromaIndex, forget_cached_clients
from assistant.index.ingest import ingest
from assistant.index.plan import doc_key
from assistant.index.reader import IndexReader
from tests.conftest import FakeEmbedder
from tests.support.tiny_corpus import TINY_CORPUS, fake_settings, write_docs


def stored_rows(index: Path) -> list[dict[str, object]]:
    forget_cached_clients()
    store = ChromaIndex(
        StoreSettings(path=index), embedder_identity=FakeEmbedder().identity, dimension=64
    )
    return [dict(metadata) for _, _, metadata in store._pages(include=["metadatas"])]


def test_a_file_edited_after_the_scan_and_reverted_is_reingested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D3: the stored key is the key of the bytes parsed, so the next run sees the revert."""
    docs = write_docs(tmp_path / "docs", TINY_CORPUS)
    settings = fake_settings(tmp_path / "idx")
    original = (docs / "leave.md").read_bytes()
    real_scan = ingest_module._scan

    def scan_then_edit(*args: object, **kwargs: object) -> object:
        scanned = real_scan(*args, **kwargs)  # type: ignore[arg-type]
        (docs / "leave.md").write_bytes(original + b"\nEDITEDMARKER holidays are doubled.\n")
        return scanned

    monkeypatch.setattr(ingest_module, "_scan", scan_then_edit)
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    monkeypatch.setattr(ingest_module, "_scan", real_scan)
    (docs / "leave.md").write_bytes(original)  # the edit is undone

    report = ingest([docs], settings=settings, embedder=FakeEmbedder())
    assert report.changed == ("leave.md",)
    texts = {
        c.text
        for c in IndexReader(
            settings.store, embedder_identity=FakeEmbedder().identity, dimension=64
        )
        .snapshot()
        .chunks
    }
    assert not any("EDITEDMARKER" in text for text in texts)
    assert ingest([docs], settings=settings, embedder=FakeEmbedder()).changed == ()


def test_every_stored_key_is_the_key_of_the_bytes_its_chunks_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D3: ``doc_key`` and ``doc_sha256`` of every row describe the same bytes."""
    docs = write_docs(tmp_path / "docs", TINY_CORPUS)
    settings = fake_settings(tmp_path / "idx")
    real_scan = ingest_module._scan

    def scan_then_edit(*args: object, **kwargs: object) -> object:
        scanned = real_scan(*args, **kwargs)  # type: ignore[arg-type]
        with (docs / "parking.md").open("ab") as stream:
            stream.write(b"\nVisitors park on level 2.\n")
        return scanned

    monkeypatch.setattr(ingest_module, "_scan", scan_then_edit)
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    signature = ingest_module._signature(
        ingest_module._Run(settings, FakeEmbedder(), None, ingest_module._no_progress)  # type: ignore[arg-type]
    )
    rows = stored_rows(settings.store.path)
    assert rows
    for row in rows:
        parsed = (docs / str(row["source"])).read_bytes()  # now unchanged since the parse
        assert row["doc_sha256"] == hashlib.sha256(parsed).hexdigest()
        assert row["doc_key"] == doc_key(docs / str(row["source"]), signature=signature)
