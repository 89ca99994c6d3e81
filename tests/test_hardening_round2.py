"""Hardening, round two: the defects of ``shared/findings/hardening-2026-12.md`` (issue 14).

Each test is named after the guarantee a fix must give and carries the defect number
(D3, D4, ...) in its docstring; ``docs/hardening.md`` has a row per defect.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from assistant.cli.ingest import ingest_main
from assistant.cli.search import main as search_main
from assistant.config import Settings, UISettings
from assistant.errors import ConfigError
from assistant.web.ui import build_demo, launch
from assistant.web.viewer import DocumentViewer
from tests.conftest import ROOT, free_port, run_ingest
from tests.retrieval_helpers import FakeEmbedder as HelperEmbedder
from tests.retrieval_helpers import make_retriever, make_snapshot, policy_corpus
from tests.ui_fakes import FakeService

# ---------------------------------------------------------------------------
# D12: settings that passed validation and broke later
# ---------------------------------------------------------------------------

BAD_SETTINGS = [
    ("ASSISTANT_LLM_TIMEOUT", "nan"),
    ("ASSISTANT_LLM_TIMEOUT", "inf"),
    ("ASSISTANT_LLM_TIMEOUT", "1e300"),
    ("ASSISTANT_MIN_SCORE", "nan"),
    ("ASSISTANT_MIN_SCORE", "inf"),
    ("ASSISTANT_MIN_SCORE", "-0.5"),
    ("ASSISTANT_MIN_COSINE", "nan"),
    ("ASSISTANT_CHUNK_OVERLAP", "nan"),
    ("ASSISTANT_CHUNK_TOKENS", "100000"),
    ("ASSISTANT_CHUNK_TOKENS", "8"),
    ("ASSISTANT_TOP_K", "1_0"),
    ("ASSISTANT_TOP_K", "٣"),
    ("ASSISTANT_TOP_K", "0"),
    ("ASSISTANT_CONTEXT_TOKENS", "-5"),
    ("ASSISTANT_PORT", "99999"),
    ("ASSISTANT_CONCURRENCY", "0"),
    ("ASSISTANT_AUTH", "alice:"),
    ("ASSISTANT_AUTH", "alice:pw, bob: "),
]


@pytest.mark.parametrize(("name", "value"), BAD_SETTINGS)
def test_every_bad_setting_is_refused_naming_the_variable(name: str, value: str) -> None:
    """D12: numbers finite and in range, passwords non-empty, else a ConfigError naming it."""
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({name: value})
    assert name in str(caught.value)


def test_an_empty_password_is_refused_without_echoing_the_other_passwords() -> None:
    """D12: the message names the user whose password is empty, never a password."""
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"ASSISTANT_AUTH": "alice:s3cret-pw,bob:"})
    assert "'bob'" in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_the_local_model_refuses_chunks_longer_than_it_reads() -> None:
    """D12: a chunk budget over the local model's 256 tokens is refused, not silently cut."""
    with pytest.raises(ConfigError, match="ASSISTANT_CHUNK_TOKENS"):
        Settings.from_env({"ASSISTANT_CHUNK_TOKENS": "400"})
    openai = Settings.from_env({"ASSISTANT_CHUNK_TOKENS": "400", "ASSISTANT_EMBEDDING": "openai"})
    assert openai.chunking.max_tokens == 400


def test_good_settings_still_pass() -> None:
    """D12 control: ordinary values (including exponents and a sign) are accepted."""
    settings = Settings.from_env(
        {
            "ASSISTANT_LLM_TIMEOUT": "1.5e2",
            "ASSISTANT_MIN_SCORE": "+0.25",
            "ASSISTANT_CHUNK_TOKENS": "256",
            "ASSISTANT_TOP_K": " 7 ",
            "ASSISTANT_AUTH": "alice:pw",
        }
    )
    assert settings.llm.timeout == 150.0
    assert settings.retrieval.min_score == 0.25
    assert settings.chunking.max_tokens == 256
    assert settings.retrieval.top_k == 7


@pytest.mark.parametrize(("name", "value"), [("ASSISTANT_LLM_TIMEOUT", "nan"), BAD_SETTINGS[-2]])
def test_the_commands_exit_2_naming_the_variable(
    name: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """D12: ``search`` and ``ingest.py`` stop before any work with exit 2 and the name."""
    err = io.StringIO()
    code = search_main(["search", "leave"], environ={name: value}, stderr=err, stdout=io.StringIO())
    assert (code, name in err.getvalue()) == (2, True)
    code = ingest_main([str(tmp_path), "--index", str(tmp_path / "idx")], environ={name: value})
    assert (code, name in capsys.readouterr().err) == (2, True)
    assert not (tmp_path / "idx").exists()


def test_a_nan_flag_is_refused_too() -> None:
    """D12: ``--min-score nan`` on the command line is refused like the variable."""
    err = io.StringIO()
    code = search_main(
        ["search", "leave", "--min-score", "nan"], environ={}, stderr=err, stdout=io.StringIO()
    )
    assert code == 2
    assert "min_score" in err.getvalue()


# ---------------------------------------------------------------------------
# D11: lone surrogates and invalid UTF-8 in questions
# ---------------------------------------------------------------------------

TINY_CORPUS = {
    "leave.md": "# Leave\n\n## Annual leave\n\nStaff get 25 days of annual leave per year.\n",
    "parking.md": "# Parking\n\n## Permits\n\nStaff parking needs a permit from facilities.\n",
}


@pytest.fixture(scope="module")
def real_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny index built by the real ``ingest.py`` with the packaged model."""
    base = tmp_path_factory.mktemp("real")
    docs = base / "docs"
    docs.mkdir()
    for name, text in TINY_CORPUS.items():
        (docs / name).write_text(text, encoding="utf-8")
    done = run_ingest(str(docs), "--index", str(base / "idx"))
    assert done.returncode == 0, done.stderr
    return base / "idx"


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


def test_a_bad_jsonl_question_gets_an_error_line_and_the_process_goes_on(real_index: Path) -> None:
    """D11: a lone surrogate (escaped) or invalid UTF-8 (raw) yields a per-line error."""
    lines = (
        b'{"id": 1, "question": "annual leave"}\n'
        b'{"id": 2, "question": "leave \\udcff x"}\n'
        b'{"id": 3, "question": "leave \xff\xfe x"}\n'
        b'{"id": 4, "question": "parking permit"}\n'
    )
    done = run_search(["--json", "--index", str(real_index)], stdin=lines)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr
    answers = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]
    assert [a["id"] for a in answers] == [1, 2, 3, 4]
    assert answers[0]["chunks"][0]["source"] == "leave.md"
    assert "valid Unicode" in answers[1]["error"]
    assert "valid Unicode" in answers[2]["error"]
    assert answers[3]["chunks"][0]["source"] == "parking.md"


def test_an_invalid_utf8_argument_is_searched_without_a_traceback(real_index: Path) -> None:
    """D11: ``search "$(printf 'leave \\xff')"`` answers (the bad byte becomes U+FFFD)."""
    done = run_search([b"annual leave \xff", "--index", str(real_index)])
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr
    assert "leave.md" in done.stdout.decode("utf-8")


def test_the_retriever_makes_a_question_valid_unicode_before_tokenising() -> None:
    """D11: any caller (UI, eval, CLI) may pass a lone surrogate; nothing reaches a tokenizer."""

    class StrictEmbedder(HelperEmbedder):
        def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
            for text in texts:
                text.encode("utf-8")  # as the real tokenizer: lone surrogates raise
            return super().embed(texts)

    embedder = StrictEmbedder()
    chunks, docs = policy_corpus()
    retriever = make_retriever(make_snapshot(chunks, docs, embedder=embedder), embedder)
    result = retriever.search("card \ud800 replacement \udcff")
    assert result.hits[0].chunk.source == "finance/fees.md"
    "\n".join((result.query, *result.trace)).encode("utf-8")  # raises on a surrogate


def test_a_lone_surrogate_in_a_ui_question_reaches_the_service_as_valid_unicode() -> None:
    """D11: a raw API call with ``"\\ud800"`` is answered, and no surrogate reaches the service."""
    service = FakeService()
    settings = Settings(ui=UISettings(port=free_port()))
    demo = build_demo(service, settings=settings, sources=[("loan-policy.md", "Loan Policy")])
    url = launch(demo, settings=settings, viewer=DocumentViewer(roots=[ROOT / "data" / "policies"]))
    try:
        events = call_chat(url, ["loan \ud800 rate", [], [], 3])
    finally:
        demo.close()
    assert "event: complete" in events
    (call,) = service.calls
    call.question.encode("utf-8")
    assert call.question == "loan \ufffd rate"


def call_chat(url: str, data: list[object]) -> str:
    """POST to Gradio's ``/call/chat`` with ASCII-escaped JSON; return the event stream."""
    body = json.dumps({"data": data}).encode("ascii")
    request = urllib.request.Request(
        url + "gradio_api/call/chat", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        event_id = json.load(response)["event_id"]
    with urllib.request.urlopen(url + f"gradio_api/call/chat/{event_id}", timeout=60) as stream:
        return str(stream.read().decode("utf-8"))
