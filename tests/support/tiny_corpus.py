"""Two one-section policies (leave, parking) and how the index and CLI tests use them.

``TINY_CORPUS`` maps file names to text; ``write_docs`` writes such a mapping into a folder;
``fake_settings`` points default settings at an index folder; ``run_search`` runs
``python -m assistant search`` in a fresh process with raw bytes in and out, as a shell would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from assistant.config import Settings, StoreSettings
from tests.conftest import ROOT

TINY_CORPUS = {
    "leave.md": "# Leave\n\n## Annual leave\n\nStaff get 25 days of annual leave per year.\n",
    "parking.md": "# Parking\n\n## Permits\n\nStaff parking needs a permit from facilities.\n",
}


def run_search(args: list[str | bytes], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m assistant search`` as a shell would, with raw bytes in and out."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    return subprocess.run(
        [sys.executable, "-m", "assistant", "search", *args],
        input=stdin,
        capture_output=True,
        env={**env, "PYTHONIOENCODING": "utf-8"},
        cwd=ROOT,
        timeout=300,
        check=False,
    )


def fake_settings(index: Path) -> Settings:
    return replace(Settings(), store=StoreSettings(path=index))


def write_docs(docs: Path, files: dict[str, str]) -> Path:
    docs.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (docs / name).write_text(text, encoding="utf-8")
    return docs
