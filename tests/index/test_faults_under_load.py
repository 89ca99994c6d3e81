"""Faults while questions are being answered (round three, own faults): an ingest killed
with SIGKILL at random points, and an ingest that reaches the file size limit.

A reader in this process answers questions back to back while a child process ingests;
every answer must come from a version of the documents that was stored, and a re-run must
leave exactly what a clean ingest leaves.
"""

from __future__ import annotations

import random
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from assistant.index.chroma import ChromaIndex, forget_cached_clients
from assistant.index.ingest import ingest
from assistant.retrieval.factory import open_retriever
from tests.conftest import ROOT, FakeEmbedder
from tests.support.tiny_corpus import fake_settings

_CHILD = """
import sys
from pathlib import Path
from assistant.index.ingest import ingest
from tests.conftest import FakeEmbedder
from tests.support.tiny_corpus import fake_settings
ingest([Path(sys.argv[1])], settings=fake_settings(Path(sys.argv[2])), embedder=FakeEmbedder())
"""


def _corpus(root: Path, version: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for n in range(24):
        sections = "".join(
            f"## Rule {p}\n\nRule {p} of policy {n} says {version} {n * 10 + p} days.\n\n"
            for p in range(6)
        )
        (root / f"policy-{n:02d}.md").write_text(f"# Policy {n}\n\n{sections}")
    return root


def _rows(index: Path) -> dict[str, str]:
    forget_cached_clients()
    store = ChromaIndex(
        fake_settings(index).store, embedder_identity=FakeEmbedder().identity, dimension=64
    )
    return {c.chunk_id: c.text for c in store.load_snapshot().chunks}


class _Questions:
    """Ask questions back to back on a thread; keep every answer's texts and any error."""

    def __init__(self, index: Path) -> None:
        self._retriever = open_retriever(fake_settings(index), embedder=FakeEmbedder())
        self.texts: set[str] = set()
        self.errors: list[BaseException] = []
        self.count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._ask, daemon=True)

    def __enter__(self) -> _Questions:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _ask(self) -> None:
        while not self._stop.is_set():
            try:
                hits = self._retriever.search(f"rule {self.count % 6} policy days").hits
            except Exception as exc:  # what a user would see as a failed answer
                self.errors.append(exc)
            else:
                self.texts.update(h.chunk.text for h in hits)
            self.count += 1


@pytest.mark.slow
def test_an_ingest_killed_at_random_points_under_questions_leaves_an_index_that_answers(
    tmp_path: Path,
) -> None:
    clean = tmp_path / "clean"
    new_docs = _corpus(tmp_path / "new", "now")
    ingest([new_docs], settings=fake_settings(clean), embedder=FakeEmbedder())
    index = tmp_path / "idx"
    docs = _corpus(tmp_path / "docs", "before")
    ingest([docs], settings=fake_settings(index), embedder=FakeEmbedder())
    stored = set(_rows(index).values()) | set(_rows(clean).values())
    _corpus(docs, "now")
    chooser = random.Random(28)

    with _Questions(index) as questions:
        for _ in range(4):
            child = subprocess.Popen(
                [sys.executable, "-c", _CHILD, str(docs), str(index)], cwd=ROOT
            )
            time.sleep(chooser.uniform(0.5, 4.0))  # a random point of the ingest
            child.kill()
            child.wait(timeout=60)
        asked = questions.count
        deadline = time.monotonic() + 30
        while questions.count < asked + 5:  # the reader still answers after the kills
            assert time.monotonic() < deadline, "no answers after the kills"
            time.sleep(0.05)

    assert not questions.errors, questions.errors[:3]
    assert questions.texts <= stored  # only versions that were stored, never a mix
    rerun = subprocess.run(
        [sys.executable, "-c", _CHILD, str(docs), str(index)], cwd=ROOT, check=False
    )
    assert rerun.returncode == 0
    assert _rows(index) == _rows(clean)


def _limited(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


# The CLI's edge in short: an `AssistantError` is printed as one line, exit 1.
_LIMITED_CHILD = (
    _CHILD.replace(
        "ingest([Path", "from assistant.errors import AssistantError\ntry:\n    ingest([Path"
    )
    + "except AssistantError as exc:\n"
    + "    print(f'error: {exc}', file=sys.stderr)\n"
    + "    sys.exit(1)\n"
)


@pytest.mark.slow
def test_an_ingest_that_reaches_the_file_size_limit_fails_clearly_and_the_index_still_serves(
    tmp_path: Path,
) -> None:
    docs = _corpus(tmp_path / "docs", "before")
    index = tmp_path / "idx"
    ingest([docs], settings=fake_settings(index), embedder=FakeEmbedder())
    before = _rows(index)
    for n in range(40):
        body = " ".join(f"word{n}x{i}" for i in range(400))
        (docs / f"big-{n:02d}.md").write_text(f"# Big {n}\n\n## Part\n\n{body}\n")
    database = index / "chroma" / "chroma.sqlite3"

    limited = subprocess.run(
        [sys.executable, "-c", _LIMITED_CHILD, str(docs), str(index)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        preexec_fn=lambda: _limited(database.stat().st_size + 32 * 1024),
    )

    assert limited.returncode == 1, limited.stderr[-2000:]
    assert "Traceback" not in limited.stderr
    assert str(index) in limited.stderr
    assert "file size limit" in limited.stderr, limited.stderr[-2000:]
    after = _rows(index)
    # Nothing stored was lost; what the failed run wrote are whole new documents.
    assert {k: after[k] for k in before} == before
    assert all(k.startswith("big-") for k in set(after) - set(before))
    ingest([docs], settings=fake_settings(index), embedder=FakeEmbedder())
    assert {f"big-{n:02d}.md#0" for n in range(40)} <= set(_rows(index))
