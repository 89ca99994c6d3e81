"""An ingest killed mid-write: readers stay on one version, the next run repairs (D4, D9).

The kills are real: the ingest runs in a child process that SIGKILLs itself at a chosen step.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.config import StoreSettings
from assistant.index.changes import read_changes
from assistant.index.chroma import ChromaIndex, forget_cached_clients
from assistant.index.reader import IndexReader
from tests.conftest import FakeEmbedder, run_python
from tests.support.tiny_corpus import TINY_CORPUS, write_docs

KILL_IN_COMMIT = """
import os, signal, sys
from dataclasses import replace
from pathlib import Path
import assistant.index.chroma as chroma
from assistant.config import Settings, StoreSettings
from assistant.index.ingest import ingest
from tests.conftest import FakeEmbedder

if sys.argv[3] == "kill":
    # Dies after the collection says clean with the new generation, before the file.
    chroma.write_generation = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
settings = replace(Settings(), store=StoreSettings(path=Path(sys.argv[2])))
ingest([Path(sys.argv[1])], settings=settings, embedder=FakeEmbedder())
"""


def ingest_in_child(docs: Path, index: Path, mode: str) -> int:
    return run_python(KILL_IN_COMMIT, str(docs), str(index), mode).returncode


def committed_generation(index: Path) -> str:
    forget_cached_clients()
    store = ChromaIndex(
        StoreSettings(path=index), embedder_identity=FakeEmbedder().identity, dimension=64
    )
    metadata = store._open(create=False).metadata or {}
    return str(metadata["generation"])


@pytest.mark.slow
def test_after_a_kill_inside_commit_the_next_run_republishes_the_generation(
    tmp_path: Path,
) -> None:
    """D4: a normal (no-op) run after the kill makes the file equal the committed generation."""
    docs = write_docs(tmp_path / "docs", TINY_CORPUS)
    index = tmp_path / "idx"
    assert ingest_in_child(docs, index, "normal") == 0
    reader = IndexReader(
        StoreSettings(path=index), embedder_identity=FakeEmbedder().identity, dimension=64
    )
    assert {c.source for c in reader.snapshot().chunks} == set(TINY_CORPUS)

    (docs / "parking.md").unlink()
    assert ingest_in_child(docs, index, "kill") == -9
    stale = (index / "generation").read_text(encoding="utf-8")
    assert committed_generation(index) != stale  # the window the finding describes

    assert ingest_in_child(docs, index, "normal") == 0  # finds nothing to do
    assert (index / "generation").read_text(encoding="utf-8") == committed_generation(index)
    assert {c.source for c in reader.snapshot().chunks} == {"leave.md"}
    assert ingest_in_child(docs, index, "normal") == 0
    assert (index / "generation").read_text(encoding="utf-8") == committed_generation(index)


KILL_AT_FIRST_DELETE = """
import os, signal, sys
from dataclasses import replace
from pathlib import Path
from assistant.config import Settings, StoreSettings
from assistant.index.chroma import ChromaIndex
from assistant.index.ingest import ingest
from tests.conftest import FakeEmbedder

if sys.argv[3] == "kill":
    # The new chunks are written; the old version's extra chunks are not deleted yet.
    ChromaIndex.delete = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
settings = replace(Settings(), store=StoreSettings(path=Path(sys.argv[2])))
ingest([Path(sys.argv[1])], settings=settings, embedder=FakeEmbedder())
"""


def _ingest_child(docs: Path, index: Path, mode: str) -> int:
    return run_python(KILL_AT_FIRST_DELETE, str(docs), str(index), mode).returncode


def _rule(word: str, n: int) -> str:
    filler = " ".join(f"{word}{n} expense claim rule receipts audit clause{k}" for k in range(30))
    return f"## Rule {n}\n\n{filler}.\n"


def _reader(index: Path) -> IndexReader:
    return IndexReader(
        StoreSettings(path=index), embedder_identity=FakeEmbedder().identity, dimension=64
    )


@pytest.mark.slow
def test_a_reader_after_a_crashed_ingest_serves_one_version_of_each_document(
    tmp_path: Path,
) -> None:
    """D9: killed at its first stale-chunk deletion, the ingest leaves two versions on disk."""
    docs, index = tmp_path / "docs", tmp_path / "idx"
    docs.mkdir()
    old = "# Expenses\n\n" + "\n".join(_rule("OLDVERSION", n) for n in range(4))
    (docs / "expenses.md").write_text(old, encoding="utf-8")
    (docs / "leave.md").write_text("# Leave\n\nStaff get 25 days of leave.\n", encoding="utf-8")
    assert _ingest_child(docs, index, "normal") == 0
    before = [c for c in _reader(index).snapshot().chunks if c.source == "expenses.md"]
    assert len(before) >= 3, "the old version must have several chunks"

    (docs / "expenses.md").write_text("# Expenses\n\n" + _rule("NEWVERSION", 0), encoding="utf-8")
    assert _ingest_child(docs, index, "kill") == -9

    snapshot = _reader(index).snapshot()  # a newly started reader
    texts = [c.text for c in snapshot.chunks if c.source == "expenses.md"]
    assert texts, "the document's new version is served"
    assert all("NEWVERSION" in t and "OLDVERSION" not in t for t in texts), texts
    assert {c.source for c in snapshot.chunks} == {"expenses.md", "leave.md"}
    assert len(snapshot.vectors) == len(snapshot.chunks)

    assert _ingest_child(docs, index, "normal") == 0  # the rerun repairs the store
    repaired = [c.text for c in _reader(index).snapshot().chunks if c.source == "expenses.md"]
    assert repaired == texts


KILL_AT_COMMIT = """
import os, signal, sys
from dataclasses import replace
from pathlib import Path
from assistant.config import Settings, StoreSettings
from assistant.index.chroma import ChromaIndex
from assistant.index.ingest import ingest
from tests.conftest import FakeEmbedder

if sys.argv[3] == "kill":
    # Every chunk is written; the commit (and the change list after it) never happens.
    ChromaIndex.commit = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
settings = replace(Settings(), store=StoreSettings(path=Path(sys.argv[2])))
report = ingest([Path(sys.argv[1])], settings=settings, embedder=FakeEmbedder())
print([(c.source, c.change, c.sections_added) for c in report.changes])
"""


@pytest.mark.slow
def test_an_edit_whose_ingest_died_at_commit_still_reaches_the_change_list(
    tmp_path: Path,
) -> None:
    """D11 (issue 28): the rerun found the new chunks stored and listed nothing, for good."""
    docs = tmp_path / "docs"
    docs.mkdir()
    leave = docs / "leave.md"
    leave.write_text("# Leave Rules\n\n## Annual Leave\n\nStaff get 25 days.\n")
    index = tmp_path / "idx"
    assert run_python(KILL_AT_COMMIT, str(docs), str(index), "normal").returncode == 0
    with leave.open("a") as out:
        out.write("\n## Sick Leave\n\nStaff get KILLMARK ten days.\n")
    assert run_python(KILL_AT_COMMIT, str(docs), str(index), "kill").returncode == -9

    rerun = run_python(KILL_AT_COMMIT, str(docs), str(index), "normal")
    assert rerun.returncode == 0, rerun.stderr
    assert "Sick Leave" in rerun.stdout  # the webhook and the report get it too
    listed = [(c.change, c.sections_added) for c in read_changes(index)]
    assert [change for change, _ in listed] == ["added", "edited"], listed
    assert listed[1][1] == ("Leave Rules > Sick Leave",)
    again = run_python(KILL_AT_COMMIT, str(docs), str(index), "normal")
    assert again.stdout.strip() == "[]"
    assert len(read_changes(index)) == 2
