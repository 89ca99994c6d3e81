"""The writer lease: two ingest processes that share only a Chroma server never write at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, ChromaServer, run_ingest

# Another machine's ingest: it holds the server's lease (own lock directory) until killed.
_HOLDER = """
import sys, time
from assistant.config import StoreSettings
from assistant.index.chroma import ChromaIndex
from assistant.index.lock import writer_lease
store = StoreSettings(path=__import__("pathlib").Path(sys.argv[1]), host="127.0.0.1",
                      port=int(sys.argv[2]))
index = ChromaIndex(store, embedder_identity="x", dimension=1)
with writer_lease(index, wait=False, seconds=float(sys.argv[3])):
    print("held", flush=True)
    time.sleep(600)
"""


def hold_lease(tmp_path: Path, server: ChromaServer, seconds: float) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _HOLDER,
            str(tmp_path / "other-machine"),
            str(server.port),
            str(seconds),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    return holder


def small_docs(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "leave.md").write_text("# Leave\n\n## Annual Leave\n\nTwenty one days.\n")
    return root


@pytest.mark.server
@pytest.mark.timeout(600)
def test_a_second_machine_refuses_to_write_while_the_first_holds_the_lease(
    tmp_path: Path, chroma_server: ChromaServer
) -> None:
    docs = small_docs(tmp_path / "docs")
    env = {"ASSISTANT_CHROMA_HOST": "127.0.0.1", "ASSISTANT_CHROMA_PORT": str(chroma_server.port)}
    holder = hold_lease(tmp_path, chroma_server, seconds=60)
    try:
        refused = run_ingest(str(docs), "--index", str(tmp_path / "this-machine"), env=env)
        assert refused.returncode == 3, refused.stderr
        assert "another ingest" in refused.stderr
    finally:
        holder.send_signal(signal.SIGTERM)
        holder.wait(timeout=60)


@pytest.mark.server
@pytest.mark.timeout(600)
def test_a_lease_left_by_a_killed_writer_expires(
    tmp_path: Path, chroma_server: ChromaServer
) -> None:
    docs = small_docs(tmp_path / "docs")
    env = {"ASSISTANT_CHROMA_HOST": "127.0.0.1", "ASSISTANT_CHROMA_PORT": str(chroma_server.port)}
    holder = hold_lease(tmp_path, chroma_server, seconds=4)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=60)
    killed_at = time.monotonic()

    early = run_ingest(str(docs), "--index", str(tmp_path / "this-machine"), env=env)
    if time.monotonic() - killed_at < 4:
        assert early.returncode == 3, early.stderr
    time.sleep(max(0.0, 4.5 - (time.monotonic() - killed_at)))
    later = run_ingest(str(docs), "--index", str(tmp_path / "this-machine"), env=env)

    assert later.returncode == 0, later.stderr
