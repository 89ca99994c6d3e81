"""``ui.py`` as a user starts it: what it says when it cannot serve."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT


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
