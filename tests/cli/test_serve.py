"""``ui.py`` as a user starts it: what it says when it cannot serve."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT, free_port, run_ingest
from tests.support.tiny_corpus import TINY_CORPUS, write_docs


@pytest.mark.slow
def test_a_busy_port_says_to_use_another_with_port(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()
        ran = subprocess.run(
            [sys.executable, "ui.py", "--port", str(port), "--index", str(tmp_path / "index")],
            capture_output=True,
            text=True,
            env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"},
            cwd=ROOT,
            timeout=120,
            check=False,
        )
        elapsed = time.monotonic() - started
    assert ran.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in ran.stderr
    assert "--port 8000" in ran.stderr
    assert "GRADIO_SERVER_PORT" not in ran.stderr  # Gradio's own advice does not apply
    assert "Traceback" not in ran.stderr
    assert ran.stdout == ""
    assert elapsed < 30  # refused before the index and the model load


def _serve(port: int, index: Path, log: Path) -> subprocess.Popen[bytes]:
    """Start ``ui.py`` on ``port`` in a process group of its own, output to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "ui.py", "--port", str(port), "--index", str(index)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"},
            cwd=ROOT,
            start_new_session=True,
        )


def _wait_until_served(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + 180
    while process.poll() is None:
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)
    raise AssertionError(f"ui.py exited with {process.returncode}:\n{log.read_text()}")


@pytest.mark.slow
def test_a_restart_right_after_a_crash_serves_on_the_same_port(tmp_path: Path) -> None:
    # A server killed with open connections leaves them closing (FIN_WAIT, TIME_WAIT) on
    # its port for up to a minute; the port is free to listen on all the same.
    docs = write_docs(tmp_path / "docs", TINY_CORPUS)
    index = tmp_path / "index"
    assert run_ingest(str(docs), "--index", str(index)).returncode == 0
    port, log = free_port(), tmp_path / "ui.log"
    url = f"http://127.0.0.1:{port}/"
    first = _serve(port, index, log)
    try:
        _wait_until_served(first, url, log)
        with httpx.Client() as browser:  # a page keeps its connection open
            assert browser.get(url).status_code == 200
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(timeout=60)
            second = _serve(port, index, log)
            try:
                _wait_until_served(second, url, log)
            finally:
                if second.poll() is None:
                    os.killpg(second.pid, signal.SIGKILL)
                    second.wait(timeout=60)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    assert "already in use" not in log.read_text()
