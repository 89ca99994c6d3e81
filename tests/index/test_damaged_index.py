"""A damaged index database or generation file: ``--rebuild`` recovers, readers reload (D14)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from assistant.index.chroma import ChromaIndex, forget_cached_clients
from assistant.index.ingest import ingest
from assistant.index.reader import IndexReader
from tests.conftest import FakeEmbedder, run_ingest
from tests.support.tiny_corpus import TINY_CORPUS, fake_settings, run_search, write_docs


@pytest.mark.parametrize("damage", ["garbage", "half"])
def test_rebuild_recovers_a_malformed_index_database(tmp_path: Path, damage: str) -> None:
    """D14: a damaged ``chroma.sqlite3`` names ``--rebuild``, and ``--rebuild`` recovers it."""
    docs = write_docs(tmp_path / "docs", TINY_CORPUS)
    index = tmp_path / "idx"
    assert run_ingest(str(docs), "--index", str(index)).returncode == 0
    database = index / "chroma" / "chroma.sqlite3"
    data = database.read_bytes()
    if damage == "half":
        database.write_bytes(data[: len(data) // 2])
    else:
        database.write_bytes(data[:4096] + os.urandom(16384) + data[4096 + 16384 :])

    broken = run_ingest(str(docs), "--index", str(index))
    assert broken.returncode == 1
    assert "--rebuild" in broken.stderr
    rebuilt = run_ingest(str(docs), "--index", str(index), "--rebuild", "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert sorted(json.loads(rebuilt.stdout)["documents"]["added"]) == sorted(TINY_CORPUS)
    found = run_search(["annual leave", "--index", str(index)])
    assert found.returncode == 0, found.stderr.decode(errors="replace")
    assert "leave.md" in found.stdout.decode("utf-8")


def test_rebuild_keeps_other_collections_of_a_readable_index(tmp_path: Path) -> None:
    """D14 control: a readable index is rebuilt through Chroma, not by deleting the folder."""
    docs = write_docs(tmp_path / "docs", TINY_CORPUS)
    settings = fake_settings(tmp_path / "idx")
    other = replace(settings, store=replace(settings.store, collection="other-corpus"))
    ingest([docs], settings=other, embedder=FakeEmbedder())
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    ingest([docs], settings=settings, embedder=FakeEmbedder(), rebuild=True)
    forget_cached_clients()
    kept = ChromaIndex(other.store, embedder_identity=FakeEmbedder().identity, dimension=64)
    assert {c.source for c in kept.load_snapshot().chunks} == set(TINY_CORPUS)


@pytest.mark.parametrize("content", [b"\xff\xfe\x00garbage", b"\x80"])
def test_an_unreadable_generation_file_means_reload_not_a_crash(
    tmp_path: Path, content: bytes
) -> None:
    """D14: non-UTF-8 ``INDEX/generation`` makes the reader reload, never raise."""
    docs = write_docs(tmp_path / "docs", {"leave.md": TINY_CORPUS["leave.md"]})
    settings = fake_settings(tmp_path / "idx")
    embedder = FakeEmbedder()
    reader = IndexReader(settings.store, embedder_identity=embedder.identity, dimension=64)
    ingest([docs], settings=settings, embedder=embedder)
    assert {c.source for c in reader.snapshot().chunks} == {"leave.md"}
    write_docs(docs, {"parking.md": TINY_CORPUS["parking.md"]})
    ingest([docs], settings=settings, embedder=embedder)
    (settings.store.path / "generation").write_bytes(content)

    reloaded = reader.snapshot()
    assert {c.source for c in reloaded.chunks} == {"leave.md", "parking.md"}
    assert reader.snapshot() is reloaded  # the same bad bytes: no reload on every question
