"""Damaged files beside the index (round three, own faults): a clear message naming the file
and a way out, or the damage is read around; never a traceback, never a loss of what was stored.

Each case builds a small real index (embedded Chroma, the fake embedder), damages one file
and does what a user or a running reader would do next.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assistant.config import Settings
from assistant.errors import IndexNotFoundError, StoreError
from assistant.index.changes import read_changes
from assistant.index.chroma import forget_cached_clients
from assistant.index.ingest import ingest
from assistant.index.reader import IndexReader
from tests.conftest import FakeEmbedder
from tests.support.tiny_corpus import TINY_CORPUS, fake_settings, write_docs

EDITED = "# Leave\n\n## Annual leave\n\nStaff get 30 days of annual leave per year.\n"


def _indexed(tmp_path: Path) -> tuple[Path, Settings]:
    docs = write_docs(tmp_path / "docs", TINY_CORPUS)
    settings = fake_settings(tmp_path / "idx")
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    return docs, settings


def _reader(settings: Settings) -> IndexReader:
    return IndexReader(settings.store, embedder_identity=FakeEmbedder().identity, dimension=64)


def _texts(reader: IndexReader) -> set[str]:
    return {c.text for c in reader.snapshot().chunks}


def _edit_and_ingest(docs: Path, settings: Settings) -> None:
    (docs / "leave.md").write_text(EDITED)
    ingest([docs], settings=settings, embedder=FakeEmbedder())


@pytest.mark.parametrize("damage", ["emptied", "deleted"])
def test_a_lost_index_database_names_the_file_and_the_way_out(tmp_path: Path, damage: str) -> None:
    docs, settings = _indexed(tmp_path)
    database = settings.store.path / "chroma" / "chroma.sqlite3"
    forget_cached_clients()
    if damage == "emptied":
        database.write_bytes(b"")
    else:
        database.unlink()

    with pytest.raises(IndexNotFoundError) as raised:
        _reader(settings).snapshot()
    assert str(database) in str(raised.value)
    assert "python ingest.py" in str(raised.value)
    # The way out works: the documents are still there to ingest again.
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    forget_cached_clients()
    assert {c.source for c in _reader(settings).snapshot().chunks} == set(TINY_CORPUS)


@pytest.mark.parametrize("damage", ["garbage", "empty", "not-utf8", "folder-deleted"])
def test_damaged_change_records_make_a_running_reader_reload_in_full(
    tmp_path: Path, damage: str
) -> None:
    docs, settings = _indexed(tmp_path)
    reader = _reader(settings)
    assert not any("30 days" in t for t in _texts(reader))
    _edit_and_ingest(docs, settings)
    records = settings.store.path / "commits"
    for record in records.glob("*.json"):
        content = {"garbage": b'{"generation": [', "empty": b"", "not-utf8": b"\xff\xfe{"}
        if damage in content:
            record.write_bytes(content[damage])
    if damage == "folder-deleted":
        shutil.rmtree(records)

    texts = _texts(reader)

    assert any("30 days" in t for t in texts)
    assert not any("25 days" in t for t in texts)


@pytest.mark.parametrize(
    "damage",
    [b"{not json\n", b"\xff\xfe\x80 not utf-8\n", b"[1, 2]\n42\nnull\n", b'{"source": "x.md"'],
    ids=["broken-json", "not-utf8", "not-an-object", "cut-short"],
)
def test_a_damaged_change_list_keeps_its_readable_lines(tmp_path: Path, damage: bytes) -> None:
    docs, settings = _indexed(tmp_path)
    index = settings.store.path
    before = read_changes(index)
    assert {c.source for c in before} == set(TINY_CORPUS)
    with (index / "changes.jsonl").open("ab") as out:
        out.write(damage)
    assert read_changes(index) == before

    _edit_and_ingest(docs, settings)
    # The next record is readable: a line cut short (a crash, a full disk) does not swallow it.
    after = read_changes(index)
    assert after[: len(before)] == before
    assert [(c.source, c.change) for c in after[len(before) :]] == [("leave.md", "edited")]


@pytest.mark.parametrize("name", ["changes.pending.json", "sections.json"])
@pytest.mark.parametrize("content", [b"{garbage", b"\xff\xfe\x00"], ids=["garbage", "not-utf8"])
def test_a_damaged_change_list_state_does_not_stop_an_ingest(
    tmp_path: Path, name: str, content: bytes
) -> None:
    docs, settings = _indexed(tmp_path)
    (settings.store.path / name).write_bytes(content)

    _edit_and_ingest(docs, settings)

    forget_cached_clients()
    assert any("30 days" in t for t in _texts(_reader(settings)))
    assert not (settings.store.path / "changes.pending.json").exists()
    assert read_changes(settings.store.path)  # the list is still readable


@pytest.mark.parametrize("damage", ["deleted", "empty"])
def test_a_lost_generation_file_makes_a_reader_reload_once(tmp_path: Path, damage: str) -> None:
    docs, settings = _indexed(tmp_path)
    reader = _reader(settings)
    reader.snapshot()
    _edit_and_ingest(docs, settings)
    generation = settings.store.path / "generation"
    if damage == "deleted":
        generation.unlink()
    else:
        generation.write_bytes(b"")

    reloaded = reader.snapshot()

    assert any("30 days" in c.text for c in reloaded.chunks)
    assert reader.snapshot() is reloaded  # not reloaded again on every question
    ingest([docs], settings=settings, embedder=FakeEmbedder())  # and the next ingest works
    assert generation.read_text(encoding="utf-8")


def test_a_writer_lock_that_is_not_a_file_names_it_and_the_way_out(tmp_path: Path) -> None:
    docs, settings = _indexed(tmp_path)
    lock = settings.store.path / "ingest.lock"
    lock.unlink()
    lock.mkdir()

    with pytest.raises(StoreError) as raised:
        ingest([docs], settings=settings, embedder=FakeEmbedder())

    assert str(lock) in str(raised.value)
    assert "remove it" in str(raised.value)
    lock.rmdir()
    _edit_and_ingest(docs, settings)
    assert any("30 days" in t for t in _texts(_reader(settings)))
