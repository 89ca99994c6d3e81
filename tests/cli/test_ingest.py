"""ingest.py as administrators and other tools use it: real processes, real model.

What the command prints and returns is checked in process (`ingest_in_process`), what
needs a process of its own (a terminal, a kill, a lock, a blocked network, a usage
error) in one.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from assistant.config import Settings, StoreSettings
from assistant.embeddings.factory import make_embedder
from assistant.index.chroma import ChromaIndex
from tests.conftest import INGEST, ROOT, ChromaServer, ingest_in_process, run_ingest
from tests.support.paths import NETBLOCK


def stored_state(index: Path, **store: object) -> dict[str, tuple[str, str, str]]:
    embedder = make_embedder(Settings().embedding)
    settings = StoreSettings(path=index, **store)  # type: ignore[arg-type]
    snapshot = ChromaIndex(
        settings, embedder_identity=embedder.identity, dimension=embedder.dimension
    ).load_snapshot()
    return {
        c.chunk_id: (c.text, c.source, snapshot.vectors[i].round(4).tobytes().hex())
        for i, c in enumerate(snapshot.chunks)
    }


def small_corpus(root: Path, count: int = 6) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        body = "\n\n".join(
            f"Rule {i}.{j}: members in branch {i} may apply for product {j} after {j + 3} months."
            for j in range(30)
        )
        (root / f"policy-{i}.md").write_text(f"# Policy {i}\n\n## Terms\n\n{body}\n")
    return root


@pytest.mark.slow
def test_json_summary_contract_and_second_run_is_a_no_op(tmp_path: Path) -> None:
    docs = small_corpus(tmp_path / "docs", count=3)
    (docs / "notes.xyz").write_text("not a policy")
    index = tmp_path / "index"

    first = ingest_in_process(str(docs), "--index", str(index), "--json")
    second = ingest_in_process(str(docs), "--index", str(index), "--json")

    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert summary["counts"] == {
        "added": 3,
        "changed": 0,
        "unchanged": 0,
        "removed": 0,
        "failed": 1,
        "skipped": 0,
    }
    assert summary["documents"]["skipped"] == []
    assert summary["documents"]["failed"][0]["source"] == "notes.xyz"
    assert "unsupported" in summary["documents"]["failed"][0]["reason"]
    assert summary["chunks"]["written"] > 3
    assert {"scan", "parse", "embed", "write"} <= set(summary["timings_s"])
    again = json.loads(second.stdout)
    assert again["counts"]["unchanged"] == 3
    assert again["chunks"] == {"written": 0, "deleted": 0, "oversize": 0}


@pytest.mark.slow
def test_strict_fails_the_run_and_dry_run_prints_the_plan(tmp_path: Path) -> None:
    docs = small_corpus(tmp_path / "docs", count=2)
    (docs / "binary.md").write_bytes(b"# T\n\x00\x01\x02")
    index = tmp_path / "index"

    plan = ingest_in_process(str(docs), "--index", str(index), "--dry-run")
    strict = ingest_in_process(str(docs), "--index", str(index), "--strict")

    assert plan.returncode == 0
    assert "Plan (dry run" in plan.stdout
    assert "2 to add" in plan.stdout
    assert "binary.md" in plan.stdout
    assert strict.returncode == 1
    assert not (index / "chroma").exists()


@pytest.mark.slow
def test_a_redirect_page_is_skipped_and_strict_still_succeeds(tmp_path: Path) -> None:
    docs = small_corpus(tmp_path / "docs", count=1)
    (docs / "moved.md").write_text("---\nredirect_to: /policy-0\n---\n")
    index = tmp_path / "index"

    strict = ingest_in_process(str(docs), "--index", str(index), "--strict", "--json")
    text = ingest_in_process(str(docs), "--index", str(index))

    assert strict.returncode == 0, strict.stderr
    summary = json.loads(strict.stdout)
    assert summary["counts"]["skipped"] == 1
    assert summary["counts"]["failed"] == 0
    assert summary["documents"]["skipped"][0]["source"] == "moved.md"
    assert summary["documents"]["added"] == ["policy-0.md"]
    assert text.returncode == 0
    assert "1 skipped (no text)" in text.stdout
    assert "skipped moved.md: no text found" in text.stdout


def sectioned_corpus(root: Path, *, docs: int, sections: int) -> Path:
    """Documents with one short chunk per section: a corpus of ``docs * sections`` chunks."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(docs):
        body = "\n\n".join(
            f"## Rule {j}\n\nBranch {i} members may apply for product {j} after {j + 3} months."
            for j in range(sections)
        )
        (root / f"rules-{i}.md").write_text(f"# Rules {i}\n\n{body}\n")
    return root


def run_ingest_on_a_terminal(*args: str) -> tuple[int, str, str]:
    """Run ingest.py with stderr on a real pseudo-terminal; return (code, stdout, stderr)."""
    master, slave = pty.openpty()
    # A terminal 100 columns wide: tqdm draws nothing on one with no size.
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    with subprocess.Popen(
        [sys.executable, INGEST, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        cwd=ROOT,
    ) as proc:
        os.close(slave)
        received = bytearray()
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            received += data
        stdout = proc.stdout.read().decode() if proc.stdout else ""
        code = proc.wait(timeout=600)
    os.close(master)
    return code, stdout, received.decode(errors="replace")


@pytest.mark.slow
def test_progress_bar_follows_the_embedding_on_a_terminal_only(tmp_path: Path) -> None:
    docs = sectioned_corpus(tmp_path / "docs", docs=4, sections=40)

    code, stdout, terminal = run_ingest_on_a_terminal(str(docs), "--index", str(tmp_path / "a"))
    piped = run_ingest(str(docs), "--index", str(tmp_path / "b"))

    assert code == 0, terminal
    written = int(re.search(r"chunks: (\d+) written", stdout)[1])  # type: ignore[index]
    assert written > 128  # several embedding slices, so the rate and ETA are measured
    frames = [f for f in terminal.split("\r") if f.startswith("embedding:")]
    # Chunks per second and a real ETA while embedding, then every chunk done.
    assert any(re.search(r"\d+/\d+ \[\d\d:\d\d<\d\d:\d\d, +[\d.]+chunk/s", f) for f in frames)
    assert any(f"{written}/{written} [" in f for f in frames), frames
    assert any("4/4 documents" in f for f in frames)
    # On a pipe (a log file, CI): no bar, no carriage-return frames.
    assert piped.returncode == 0, piped.stderr
    assert "\r" not in piped.stderr
    assert "embedding" not in piped.stderr
    assert f"chunks: {written} written" in piped.stdout


@pytest.mark.slow
def test_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    result = run_ingest(str(tmp_path / "nowhere"), "--index", str(tmp_path / "index"))
    assert result.returncode == 2
    assert "nowhere" in result.stderr


@pytest.mark.slow
def test_ingest_works_with_the_network_blocked(tmp_path: Path) -> None:
    docs = small_corpus(tmp_path / "docs", count=2)
    env = {
        "PYTHONPATH": str(NETBLOCK),
        "HF_HUB_OFFLINE": "0",
        "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty-cache"),
    }
    probe = subprocess.run(
        [sys.executable, "-c", "import socket; socket.create_connection(('192.0.2.1', 80), 1)"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert "network blocked" in probe.stderr  # the guard is active

    result = run_ingest(str(docs), "--index", str(tmp_path / "index"), "--json", env=env)

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["counts"]["added"] == 2


@pytest.mark.slow
def test_two_ingests_at_once_one_is_refused(tmp_path: Path) -> None:
    docs = small_corpus(tmp_path / "docs", count=16)
    index = tmp_path / "index"
    first = subprocess.Popen(
        [sys.executable, INGEST, str(docs), "--index", str(index)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 60
        while not (index / "ingest.lock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        second = run_ingest(str(docs), "--index", str(index))
    finally:
        assert first.wait(timeout=600) == 0
    assert second.returncode == 3
    assert "another ingest" in second.stderr
    assert len(stored_state(index)) > 16


@pytest.fixture(scope="module")
def kill_corpus(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, tuple[str, str, str]]]:
    """A corpus and the state a clean ingest of it leaves (computed once)."""
    base = tmp_path_factory.mktemp("kill")
    docs = small_corpus(base / "docs", count=24)
    assert ingest_in_process(str(docs), "--index", str(base / "clean")).returncode == 0
    return docs, stored_state(base / "clean")


@pytest.mark.slow
@pytest.mark.parametrize("delay", [1.5, 4.0])
def test_killed_ingest_converges_to_a_clean_ingest(
    tmp_path: Path, delay: float, kill_corpus: tuple[Path, dict[str, tuple[str, str, str]]]
) -> None:
    docs, clean = kill_corpus
    crashed = tmp_path / "crashed"
    victim = subprocess.Popen(
        [sys.executable, INGEST, str(docs), "--index", str(crashed)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    time.sleep(delay)
    victim.send_signal(signal.SIGKILL)
    victim.wait()

    rerun = run_ingest(str(docs), "--index", str(crashed), "--json")

    assert rerun.returncode == 0, rerun.stderr
    assert stored_state(crashed) == clean


@pytest.mark.server
def test_ingest_into_a_chroma_server_survives_a_restart(
    tmp_path: Path, chroma_server: ChromaServer
) -> None:
    docs = small_corpus(tmp_path / "docs", count=3)
    env = {"ASSISTANT_CHROMA_HOST": "127.0.0.1", "ASSISTANT_CHROMA_PORT": str(chroma_server.port)}
    local = tmp_path / "local"

    first = run_ingest(str(docs), "--index", str(tmp_path / "lock"), "--json", env=env)
    assert first.returncode == 0, first.stderr
    assert ingest_in_process(str(docs), "--index", str(local)).returncode == 0
    chroma_server.stop()
    chroma_server.start()
    second = run_ingest(str(docs), "--index", str(tmp_path / "lock"), "--json", env=env)

    assert json.loads(second.stdout)["counts"]["unchanged"] == 3
    remote = stored_state(tmp_path / "lock", host="127.0.0.1", port=chroma_server.port)
    assert remote == stored_state(local)
