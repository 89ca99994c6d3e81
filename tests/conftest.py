"""Shared fixtures: a clean environment, a fast fake embedder, a real Chroma server, Chromium."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, settings

from tests.support.chromium import launched_chromium
from tests.support.paths import ROOT, SAMPLE_POLICIES

__all__ = ["ROOT", "SAMPLE_POLICIES"]

# Hypothesis' per-example deadline (200 ms) times the machine, not the code: on a loaded
# 2-core machine a property test failed with DeadlineExceeded once in a few runs. The
# invariants stay checked on every example; the suite's pytest-timeout still bounds a hang.
settings.register_profile("project", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("project")
INGEST = str(ROOT / "ingest.py")


def run_ingest(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``ingest.py`` in a fresh process, as an administrator would."""
    return subprocess.run(
        [sys.executable, INGEST, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
        timeout=600,
        check=False,
    )


def ingest_in_process(*args: str, env: dict[str, str] | None = None) -> CompletedProcess[str]:
    """Run ``ingest.py ARGS`` in this process; give what `run_ingest` gives.

    For tests of what the command prints and returns, not of its process: no interpreter
    start, imports or model load each time (the packaged model is loaded once per
    session). ``stderr`` holds what the command writes there itself, not log records.
    """
    from assistant.cli.ingest import ingest_main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = ingest_main(list(args), environ={**os.environ, **(env or {})}, stdout=out)
    return CompletedProcess([INGEST, *args], code, out.getvalue(), err.getvalue())


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh Python at the repository root (it may import ``tests``)."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


# Tests with these marks start a browser, a server or a model: slow whatever they check,
# as is every test of tests/e2e/ (the whole app, real processes).
SLOW_BY_KIND = ("browser", "server", "llm")


E2E = Path(__file__).parent / "e2e"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test of tests/e2e/ and every browser, server and llm test.

    ``pytest -m "not slow"`` is then the inner loop: the package folders' fast tests.
    """
    for item in items:
        in_e2e = item.path.is_relative_to(E2E)
        if in_e2e or any(item.get_closest_marker(kind) for kind in SLOW_BY_KIND):
            item.add_marker(pytest.mark.slow)


SLOW_SECONDS = 2.0
_UNMARKED_SLOW: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Add up each test's set-up and call (fixtures included) unless it is marked ``slow``."""
    if "slow" not in report.keywords and report.when != "teardown":
        _UNMARKED_SLOW[report.nodeid] = _UNMARKED_SLOW.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Name the tests over 2 s that lack ``@pytest.mark.slow`` (timings are noisy: a hint)."""
    over = sorted(
        ((seconds, node) for node, seconds in _UNMARKED_SLOW.items() if seconds > SLOW_SECONDS),
        reverse=True,
    )
    if over:
        terminalreporter.write_sep("=", f"over {SLOW_SECONDS:g} s without @pytest.mark.slow")
        for seconds, node in over:
            terminalreporter.write_line(f"{seconds:6.2f}s {node}")


@pytest.fixture(autouse=True)
def _clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the developer's own configuration out of every test."""
    for name in list(os.environ):
        if name.startswith(("ASSISTANT_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")


class FakeEmbedder:
    """Hashed bag of words: deterministic, instant, and similar texts score higher."""

    def __init__(self, dimension: int = 64, *, identity: str = "fake:bow") -> None:
        self._dimension = dimension
        self._identity = identity
        self.embedded = 0

    @property
    def identity(self) -> str:
        return f"{self._identity}{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def max_input_tokens(self) -> int:
        return 512

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) + 2 for t in texts]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.embedded += len(texts)
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                out[row, int.from_bytes(digest, "little") % self._dimension] += 1.0
            out[row, 0] += 1e-3
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ChromaServer:
    """A real ``chroma run`` process on 127.0.0.1, restartable on the same data."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        chroma = shutil.which("chroma", path=str(Path(sys.executable).parent))
        assert chroma, "the chroma command comes with the chromadb package"
        self._process = subprocess.Popen(
            [
                chroma,
                "run",
                "--path",
                str(self.path),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("chroma run did not start within 60 s")

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=30)
            self._process = None


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[ChromaServer]:
    server = ChromaServer(tmp_path / "chroma-server")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def _module_chromium() -> Iterator[Any]:
    """One chromium per test module: starting it costs seconds, a context milliseconds."""
    with launched_chromium() as launched:
        yield launched


@pytest.fixture
def browser(_module_chromium: Any) -> Iterator[Any]:
    """Debian's chromium for one test (its pages: `tests.support.chromium.open_page`).

    The module's browser, with every context the test opened closed after it, so no
    page of one test (a stream, a queued question, cookies) outlives it into the next.
    """
    yield _module_chromium
    for context in list(_module_chromium.contexts):
        context.close()
