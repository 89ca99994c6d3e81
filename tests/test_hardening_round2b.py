"""Hardening, round two (continued): D2, D5, D7 and D9 of ``shared/findings/hardening-2026-12.md``.

Each test is named after the guarantee a fix must give and carries the defect number
in its docstring; ``docs/hardening.md`` (round two) has a row per defect.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from assistant.config import StoreSettings
from assistant.index.reader import IndexReader
from tests.conftest import ROOT
from tests.conftest import FakeEmbedder as ConftestEmbedder

# ---------------------------------------------------------------------------
# D9: a reader after a crashed ingest serves one version of each document
# ---------------------------------------------------------------------------

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
    done = subprocess.run(
        [sys.executable, "-c", KILL_AT_FIRST_DELETE, str(docs), str(index), mode],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.returncode


def _rule(word: str, n: int) -> str:
    filler = " ".join(f"{word}{n} expense claim rule receipts audit clause{k}" for k in range(30))
    return f"## Rule {n}\n\n{filler}.\n"


def _reader(index: Path) -> IndexReader:
    return IndexReader(
        StoreSettings(path=index), embedder_identity=ConftestEmbedder().identity, dimension=64
    )


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
