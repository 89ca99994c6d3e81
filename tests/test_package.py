"""The package's public surface and the promise that importing it is cheap."""

from __future__ import annotations

import json
import subprocess
import sys

import assistant
from assistant.config import Settings
from tests.conftest import ROOT


def test_import_loads_no_vendor_library_and_touches_nothing() -> None:
    probe = (
        "import json, os, sys; before = set(os.listdir('.')); import assistant; "
        "heavy = ['gradio', 'chromadb', 'openai', 'onnxruntime', 'tiktoken', 'markdown_it'];"
        "print(json.dumps({'loaded': [m for m in heavy if m in sys.modules],"
        " 'created': sorted(set(os.listdir('.')) - before)}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert json.loads(out.stdout) == {"loaded": [], "created": []}


def test_every_exported_name_exists() -> None:
    assert sorted(assistant.__all__) == assistant.__all__
    for name in assistant.__all__:
        assert hasattr(assistant, name), name


def test_defaults_need_no_environment() -> None:
    settings = Settings.from_env({})
    assert settings == Settings()
    assert not settings.llm.enabled  # offline answers on a fresh machine
    assert settings.embedding.backend == "local"
    assert not settings.store.is_remote
