"""Hardening, round two: the defects of ``shared/findings/hardening-2026-12.md`` (issue 14).

Each test is named after the guarantee a fix must give and carries the defect number
(D3, D4, ...) in its docstring; ``docs/hardening.md`` has a row per defect.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from assistant.cli.ingest import ingest_main
from assistant.cli.search import main as search_main
from assistant.config import Settings
from assistant.errors import ConfigError

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
