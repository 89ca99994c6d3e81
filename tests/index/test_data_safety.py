"""Data safety under real processes: live re-ingest, server restarts, SIGKILL, full/read-only disks.

The ingest always runs as a real ``ingest.py`` subprocess, which embeds with the
packaged local model; indexes the tests build in-process use the same model,
so every index here is one the CLI could have written. Results go to
``docs/hardening.md``.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gradio_client import Client

from assistant.config import LLMSettings, Settings, StoreSettings, UISettings
from assistant.embeddings.factory import make_embedder
from assistant.index.ingest import ingest
from assistant.index.reader import IndexReader
from assistant.protocols import Embedder
from tests.conftest import INGEST, ROOT, ChromaServer, free_port, run_ingest
from tests.support.openai_server import FakeOpenAIServer, Reply
from tests.support.served_ui import launched

CITE_ALL = Reply(text="See [1] [2] [3] [4].", chunk_chars=6)

TRAVEL_V1 = "The travel allowance is OLDMARK forty dollars per day for staff on duty travel."
TRAVEL_V2 = "The travel allowance is NEWMARK fifty-five dollars per day for staff on duty travel."
GONE = "Sabbatical leave GONEMARK of six months is granted after ten years of service."
ADDED = "The bicycle scheme ADDMARK lends staff a bicycle for commuting, repaid from salary."
KEEP = "Staff parking is in lot B; parking permits are issued by the facilities desk."


@pytest.fixture(scope="module")
def real_embedder() -> Embedder:
    return make_embedder(Settings().embedding)


def write_doc(root: Path, name: str, title: str, body: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(f"# {title}\n\n## Rules\n\n{body}\n", encoding="utf-8")


def first_corpus(root: Path) -> Path:
    write_doc(root, "travel.md", "Travel Policy", TRAVEL_V1)
    write_doc(root, "sabbatical.md", "Sabbatical Policy", GONE)
    write_doc(root, "parking.md", "Parking Policy", KEEP)
    return root


def second_corpus(root: Path) -> None:
    write_doc(root, "travel.md", "Travel Policy", TRAVEL_V2)
    (root / "sabbatical.md").unlink()
    write_doc(root, "bicycle.md", "Bicycle Scheme", ADDED)


def ask(client: Client, question: str) -> str:
    """Return every message of the final answer (text, Sources, Trace) as one string.

    Each question is asked in a new session: the /chat endpoint keeps the session's
    history, and a short question would then be rewritten as a follow-up.
    """
    client.reset_session()
    job = client.submit(question, [], [], 4, api_name="/chat")
    return "\n".join(str(m.get("content", "")) for m in job.result(timeout=60))


@contextlib.contextmanager
def serving(settings: Settings, docs: Path, embedder: Embedder) -> Iterator[Client]:
    with launched(settings, docs, ingest_first=False, embedder=embedder) as app:
        yield Client(app.url, verbose=False)


class Asker(threading.Thread):
    """Keeps asking while an ingest runs; records every final answer."""

    def __init__(self, client: Client) -> None:
        super().__init__(daemon=True)
        self.client = client
        self.stop = threading.Event()
        self.answers: list[str] = []
        self.errors: list[BaseException] = []

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.answers.append(ask(self.client, "What is the travel allowance per day?"))
            except Exception as exc:  # any failure is a finding; keep it for the assert
                self.errors.append(exc)


def prompts_since(server: FakeOpenAIServer, start: int) -> str:
    return json.dumps(server.requests[start:])


def check_live_reingest(
    client: Client,
    server: FakeOpenAIServer,
    docs: Path,
    ingest_args: list[str],
    env: dict[str, str],
) -> None:
    before = ask(client, "What is the travel allowance per day?")
    assert "OLDMARK" in before  # the marker is visible to this check
    assert "GONEMARK" in ask(client, "How long is sabbatical leave?")
    second_corpus(docs)
    asker = Asker(client)
    asker.start()
    result = run_ingest(*ingest_args, env=env)
    asker.stop.set()
    asker.join(timeout=90)
    assert result.returncode == 0, result.stderr
    assert not asker.errors, asker.errors
    assert asker.answers, "no question was answered while the ingest ran"
    for answer in asker.answers:
        assert "Traceback" not in answer
        assert "could not answer" not in answer
        # One version, never both; right after the commit the edited document's rows are
        # left out until the reader has loaded them (docs/scaling.md), so possibly neither.
        assert not ("OLDMARK" in answer and "NEWMARK" in answer), answer
    mark = len(server.requests)
    deadline = time.monotonic() + 30
    travel = ask(client, "What is the travel allowance per day?")
    while "NEWMARK" not in travel and time.monotonic() < deadline:
        assert "OLDMARK" not in travel, travel
        time.sleep(0.2)
        travel = ask(client, "What is the travel allowance per day?")
    sabbatical = ask(client, "How long is sabbatical leave?")
    bicycle = ask(client, "Is there a bicycle scheme for commuting?")
    assert "NEWMARK" in travel
    assert "ADDMARK" in bicycle, bicycle
    for text in (travel, sabbatical, bicycle, prompts_since(server, mark)):
        assert "OLDMARK" not in text
        assert "GONEMARK" not in text
        assert "sabbatical.md" not in text


def test_reingest_while_the_ui_serves_never_cites_deleted_or_old_chunks(
    tmp_path: Path, real_embedder: Embedder
) -> None:
    docs = first_corpus(tmp_path / "docs")
    index = tmp_path / "index"
    with FakeOpenAIServer(default=CITE_ALL) as server:
        settings = Settings(
            store=StoreSettings(path=index),
            llm=LLMSettings(base_url=server.base_url, api_key="test", timeout=10),
            ui=UISettings(port=free_port()),
        )
        ingest([docs], settings=settings, embedder=real_embedder)
        with serving(settings, docs, real_embedder) as client:
            check_live_reingest(client, server, docs, [str(docs), "--index", str(index)], {})


@pytest.mark.server
def test_reingest_into_a_chroma_server_then_restart_the_server(
    tmp_path: Path, real_embedder: Embedder, chroma_server: ChromaServer
) -> None:
    docs = first_corpus(tmp_path / "docs")
    lock_dir = tmp_path / "lock"
    env = {"ASSISTANT_CHROMA_HOST": "127.0.0.1", "ASSISTANT_CHROMA_PORT": str(chroma_server.port)}
    with FakeOpenAIServer(default=CITE_ALL) as server:
        settings = Settings(
            store=StoreSettings(path=lock_dir, host="127.0.0.1", port=chroma_server.port),
            llm=LLMSettings(base_url=server.base_url, api_key="test", timeout=10),
            ui=UISettings(port=free_port()),
        )
        ingest([docs], settings=settings, embedder=real_embedder)
        with serving(settings, docs, real_embedder) as client:
            chroma_server.stop()
            chroma_server.start()
            assert "OLDMARK" in ask(client, "What is the travel allowance per day?")
            check_live_reingest(client, server, docs, [str(docs), "--index", str(lock_dir)], env)
            chroma_server.stop()
            down = ask(client, "What is the travel allowance per day?")
            chroma_server.start()
            after = ask(client, "What is the travel allowance per day?")
    assert "Traceback" not in down
    # D12: the running UI answers from its snapshot and never shows the store's address.
    assert "NEWMARK" in down, down
    assert f":{chroma_server.port}" not in down
    assert "NEWMARK" in after
    assert "OLDMARK" not in after


# SIGKILL at named points ---------------------------------------------------------


def policy(i: int, *, version: str, rules: int) -> str:
    return "\n\n".join(
        f"Rule {i}.{j} ({version}): members of branch {i} may apply for product {j} "
        f"after {j + 3} months of saving, subject to committee approval."
        for j in range(rules)
    )


def kill_corpus_a(root: Path) -> Path:
    for i in range(10):
        write_doc(root, f"p{i}.md", f"Policy {i}", policy(i, version="A", rules=12))
    return root


def kill_corpus_b(root: Path) -> None:
    for i in (3, 4, 5):  # changed; p3 shrinks, so it leaves stale chunk IDs behind
        write_doc(
            root, f"p{i}.md", f"Policy {i}", policy(i, version="B", rules=4 if i == 3 else 12)
        )
    for i in (6, 7, 8, 9):
        (root / f"p{i}.md").unlink()
    for i in range(3):
        write_doc(root, f"n{i}.md", f"New {i}", policy(20 + i, version="B", rules=12))


Rows = dict[str, tuple[str, dict[str, Any], np.ndarray]]


def raw_rows(index: Path) -> Rows:
    """Read every stored row straight from Chroma: an oracle independent of our decoder."""
    import chromadb
    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient.clear_system_cache()
    client = chromadb.PersistentClient(path=str(index / "chroma"))
    (collection,) = client.list_collections()
    got = collection.get(include=["documents", "metadatas", "embeddings"])
    SharedSystemClient.clear_system_cache()
    texts, metadatas, vectors = got["documents"], got["metadatas"], got["embeddings"]
    assert texts is not None
    assert metadatas is not None
    assert vectors is not None
    return {
        chunk_id: (
            texts[i],
            {k: v for k, v in metadatas[i].items() if k != "indexed_at"},
            np.asarray(vectors[i]),
        )
        for i, chunk_id in enumerate(got["ids"])
    }


def assert_same_rows(actual: Rows, expected: Rows) -> None:
    assert sorted(actual) == sorted(expected)
    for chunk_id, (text, metadata, vector) in expected.items():
        got_text, got_metadata, got_vector = actual[chunk_id]
        assert got_text == text, chunk_id
        assert got_metadata == metadata, chunk_id
        np.testing.assert_allclose(got_vector, vector, atol=1e-4, err_msg=chunk_id)


@pytest.fixture(scope="module")
def kill_setup(
    tmp_path_factory: pytest.TempPathFactory, real_embedder: Embedder
) -> tuple[Path, Path, Rows]:
    """Return (index of version A, folder now holding version B, rows of a clean B ingest)."""
    base = tmp_path_factory.mktemp("kill")
    docs = kill_corpus_a(base / "docs")
    index_a = base / "index-a"
    ingest([docs], settings=Settings(store=StoreSettings(path=index_a)), embedder=real_embedder)
    kill_corpus_b(docs)
    clean = base / "clean-b"
    ingest([docs], settings=Settings(store=StoreSettings(path=clean)), embedder=real_embedder)
    return index_a, docs, raw_rows(clean)


def kill_at(line: str, *args: str) -> list[str]:
    """Run ``ingest.py -vv`` and SIGKILL it as soon as ``line`` appears on stderr."""
    victim = subprocess.Popen(
        [sys.executable, INGEST, *args, "-vv", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    seen: list[str] = []
    assert victim.stderr is not None
    for text in victim.stderr:
        seen.append(text)
        if line in text:
            victim.kill()
            break
    victim.wait(timeout=60)
    assert victim.returncode == -9, f"never saw {line!r}:\n{''.join(seen[-20:])}"
    return seen


@pytest.mark.parametrize(
    "line",
    [
        "assistant.index.ingest: parsing p4.md",
        "assistant.index.ingest: embedding ",
        "assistant.index.ingest: wrote ",
        "assistant.index.ingest: deleting ",
        "assistant.index.ingest: removing ",
    ],
    ids=["parsing", "embedding", "between-upserts", "before-stale-delete", "pruning"],
)
def test_sigkill_at_each_stage_then_rerun_equals_a_clean_ingest(
    tmp_path: Path, kill_setup: tuple[Path, Path, Rows], line: str
) -> None:
    index_a, docs, clean = kill_setup
    index = tmp_path / "index"
    shutil.copytree(index_a, index)
    generation = (index / "generation").read_text()

    kill_at(line, str(docs), "--index", str(index))

    assert (index / "generation").read_text() == generation, "the kill came after the commit"
    assert sorted(raw_rows(index)) != sorted(clean), "the kill came too late to matter"
    rerun = run_ingest(str(docs), "--index", str(index), "--json")
    assert rerun.returncode == 0, rerun.stderr
    assert_same_rows(raw_rows(index), clean)


# Disk full and read-only --------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(path: Path, *, size: str) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root/CAP_SYS_ADMIN): {mounted.stderr}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def remount(path: Path, *options: str) -> None:
    subprocess.run(["mount", "-o", ",".join(("remount", *options)), str(path)], check=True)


def fill(disk: Path, *, leave_kb: int) -> None:
    free_kb = shutil.disk_usage(disk).free // 1024
    with (disk / "filler").open("wb") as out, contextlib.suppress(OSError):
        for _ in range(max(0, free_kb - leave_kb) // 64):
            out.write(b"\0" * 65536)


def search(index: Path, question: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assistant", "search", question, "--index", str(index), "-k", "1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def big_corpus(root: Path) -> None:
    for i in range(4):
        write_doc(root, f"big{i}.md", f"Big {i}", policy(100 + i, version="big", rules=60))


def assert_clean_failure(result: subprocess.CompletedProcess[str], index: Path, why: str) -> None:
    assert result.returncode == 1, result.stderr
    assert str(index) in result.stderr
    assert why in result.stderr
    assert "Traceback" not in result.stderr


@pytest.fixture
def small_index(tmp_path: Path, real_embedder: Embedder) -> Iterator[tuple[Path, Path, Settings]]:
    with tmpfs(tmp_path / "disk", size="16m") as disk:
        docs = first_corpus(tmp_path / "docs")
        settings = Settings(store=StoreSettings(path=disk / "index"))
        ingest([docs], settings=settings, embedder=real_embedder)
        yield disk, docs, settings


def test_disk_full_mid_ingest_fails_clearly_and_the_old_index_still_serves(
    small_index: tuple[Path, Path, Settings], real_embedder: Embedder
) -> None:
    disk, docs, settings = small_index
    index = settings.store.path
    reader = IndexReader(
        settings.store, embedder_identity=real_embedder.identity, dimension=real_embedder.dimension
    )
    before = reader.snapshot()
    generation = (index / "generation").read_text()
    big_corpus(docs)
    fill(disk, leave_kb=150)

    result = run_ingest(str(docs), "--index", str(index))

    assert_clean_failure(result, index, "full")
    assert (index / "generation").read_text() == generation
    assert reader.snapshot() is before  # a running UI keeps serving what it had
    # A new reader may need to compact Chroma's log, which needs space: it either
    # answers from the old index or says clearly that the disk is full.
    fresh = search(index, "What is the travel allowance per day?")
    if fresh.returncode != 0:
        assert_clean_failure(fresh, index, "full")
    else:
        assert "OLDMARK" in fresh.stdout
    (disk / "filler").unlink()
    assert "OLDMARK" in search(index, "What is the travel allowance per day?").stdout
    assert run_ingest(str(docs), "--index", str(index)).returncode == 0
    assert "big3.md" in search(index, "branch 103 product 7").stdout


def test_completely_full_disk_ingest_and_fresh_reader_fail_clearly(
    small_index: tuple[Path, Path, Settings],
) -> None:
    disk, docs, settings = small_index
    index = settings.store.path
    second_corpus(docs)
    fill(disk, leave_kb=0)

    result = run_ingest(str(docs), "--index", str(index))
    fresh = search(index, "What is the travel allowance per day?")

    assert_clean_failure(result, index, "full")
    # Chroma writes to its database when it opens, so a new reader needs free space too.
    assert_clean_failure(fresh, index, "full")
    (disk / "filler").unlink()
    assert "OLDMARK" in search(index, "What is the travel allowance per day?").stdout


@pytest.mark.parametrize("scope", ["whole-index", "chroma-dir-only"])
def test_read_only_index_refuses_ingest_clearly_and_still_serves_new_readers(
    small_index: tuple[Path, Path, Settings], real_embedder: Embedder, scope: str
) -> None:
    _, docs, settings = small_index
    index = settings.store.path
    reader = IndexReader(
        settings.store, embedder_identity=real_embedder.identity, dimension=real_embedder.dimension
    )
    before = reader.snapshot()
    second_corpus(docs)
    # A read-only bind mount: root ignores permission bits, but not a read-only mount.
    target = index if scope == "whole-index" else index / "chroma"
    subprocess.run(["mount", "--bind", str(target), str(target)], check=True)
    try:
        remount(target, "bind", "ro")
        result = run_ingest(str(docs), "--index", str(index))
        fresh = search(index, "What is the travel allowance per day?")
        assert reader.snapshot() is before
    finally:
        subprocess.run(["umount", str(target)], check=False)
    why = "Read-only file system" if scope == "whole-index" else "readonly database"
    assert_clean_failure(result, index, why)
    # A new reader loads the read-only index from a temporary copy.
    assert fresh.returncode == 0, fresh.stderr
    assert "OLDMARK" in fresh.stdout
    assert "OLDMARK" in search(index, "What is the travel allowance per day?").stdout
    retry = run_ingest(str(docs), "--index", str(index))
    assert retry.returncode == 0, retry.stderr
    assert "NEWMARK" in search(index, "What is the travel allowance per day?").stdout
