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
skew = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
with writer_lease(index, wait=False, seconds=float(sys.argv[3]), clock=lambda: time.time() + skew):
    print("held", flush=True)
    time.sleep(600)
"""


def hold_lease(
    tmp_path: Path, server: ChromaServer, seconds: float, skew: float = 0.0
) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _HOLDER,
            str(tmp_path / "other-machine"),
            str(server.port),
            str(seconds),
            str(skew),
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


@pytest.mark.server
@pytest.mark.timeout(600)
@pytest.mark.parametrize("skew", [-120.0, 120.0])
def test_a_holder_whose_clock_is_two_minutes_off_still_keeps_the_lease(
    tmp_path: Path, chroma_server: ChromaServer, skew: float
) -> None:
    """D16: a holder 120 s behind (its lease looks expired here) or ahead: ingest refuses."""
    docs = small_docs(tmp_path / "docs")
    env = {"ASSISTANT_CHROMA_HOST": "127.0.0.1", "ASSISTANT_CHROMA_PORT": str(chroma_server.port)}
    holder = hold_lease(tmp_path, chroma_server, seconds=6, skew=skew)
    try:
        refused = run_ingest(str(docs), "--index", str(tmp_path / "this-machine"), env=env)
        assert refused.returncode == 3, refused.stderr
        assert "another ingest" in refused.stderr
        assert holder.poll() is None
    finally:
        holder.send_signal(signal.SIGTERM)
        holder.wait(timeout=60)


@pytest.mark.server
@pytest.mark.timeout(600)
def test_a_server_dying_mid_ingest_is_reported_as_the_failed_write(
    tmp_path: Path, chroma_server: ChromaServer
) -> None:
    """D26: the lease's release used to replace the real error with a lease error."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(12):
        parts = (f"## Part {k}\n\nRule {n}.{k} says staff file form F{k}." for k in range(8))
        body = "\n\n".join(parts)
        (docs / f"policy-{n:02d}.md").write_text(f"# Policy {n}\n\n{body}\n")
    env = {
        **os.environ,
        "ASSISTANT_CHROMA_HOST": "127.0.0.1",
        "ASSISTANT_CHROMA_PORT": str(chroma_server.port),
    }
    ingest = subprocess.Popen(
        [sys.executable, str(ROOT / "ingest.py"), str(docs), "--index", str(tmp_path / "i"), "-vv"],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert ingest.stderr is not None
    seen = []
    for line in ingest.stderr:
        seen.append(line)
        if "wrote " in line and " chunks of " in line:
            chroma_server.stop()
            break
    rest = ingest.stderr.read()
    assert ingest.wait(timeout=300) == 1, "".join(seen) + rest
    errors = [line for line in rest.splitlines() if line.startswith("error:")]
    assert errors, rest
    assert "writer lease" not in errors[-1], errors
    assert "could not release the writer lease" in rest
