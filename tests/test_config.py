"""Bad settings fail where they are read, naming the setting and the value."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.config import Settings
from assistant.errors import ConfigError


def test_environment_overrides_defaults() -> None:
    settings = Settings.from_env(
        {
            "ASSISTANT_INDEX": "/srv/index",
            "ASSISTANT_CHROMA_HOST": "chroma.internal",
            "ASSISTANT_CHROMA_HEADERS": "Authorization: Bearer x; X-Tenant: hr",
            "ASSISTANT_TOP_K": "7",
            "ASSISTANT_LLM_BASE_URL": "http://127.0.0.1:11434/v1",
            "ASSISTANT_AUTH": "alice:pw1, bob:pw2",
        }
    )
    assert settings.store.path == Path("/srv/index")
    assert settings.store.is_remote
    assert settings.store.headers == (("Authorization", "Bearer x"), ("X-Tenant", "hr"))
    assert settings.retrieval.top_k == 7
    assert settings.llm.enabled
    assert settings.ui.auth == (("alice", "pw1"), ("bob", "pw2"))


def test_api_key_falls_back_to_openai_api_key() -> None:
    settings = Settings.from_env({"OPENAI_API_KEY": "sk-test"})
    assert settings.llm.api_key == settings.embedding.api_key == "sk-test"
    assert settings.llm.enabled


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ASSISTANT_TOP_K": "many"}, "ASSISTANT_TOP_K must be an integer, got 'many'"),
        ({"ASSISTANT_TOP_K": "0"}, "top_k must be at least 1, got 0"),
        ({"ASSISTANT_CHUNK_OVERLAP": "0.7"}, "chunk overlap must be in [0, 0.5), got 0.7"),
        ({"ASSISTANT_CHUNK_TOKENS": "8"}, "chunk size must be at least 16 tokens, got 8"),
        ({"ASSISTANT_CHROMA_PORT": "70000"}, "Chroma port must be 1-65535, got 70000"),
        ({"ASSISTANT_EMBEDDING": "word2vec"}, "'local' or 'openai', got 'word2vec'"),
        ({"ASSISTANT_AUTH": "alice"}, "expected 'name:value', got 'alice'"),
        ({"ASSISTANT_LLM_TIMEOUT": "-1"}, "LLM timeout must be positive, got -1.0"),
        ({"ASSISTANT_COLLECTION": "ab"}, "collection name must be 3-40 characters, got 'ab'"),
        ({"ASSISTANT_TITLE_WEIGHT": "-1"}, "title_weight must be in [0, 10], got -1.0"),
        ({"ASSISTANT_COVERAGE_WEIGHT": "-1"}, "coverage_weight must be in [0, 10], got -1.0"),
        (
            {"ASSISTANT_LEXICAL_WEIGHT": "x"},
            "ASSISTANT_LEXICAL_WEIGHT must be a finite number, got 'x'",
        ),
    ],
)
def test_invalid_values_name_the_setting_and_value(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env(env)
    assert message in str(caught.value)


def test_fusion_and_title_weights_come_from_the_environment() -> None:
    env = {
        "ASSISTANT_LEXICAL_WEIGHT": "0.2",
        "ASSISTANT_TITLE_WEIGHT": "0",
        "ASSISTANT_COVERAGE_WEIGHT": "0",
    }
    retrieval = Settings.from_env(env).retrieval
    assert (retrieval.lexical_weight, retrieval.title_weight) == (0.2, 0.0)
    assert retrieval.coverage_weight == 0.0
    defaults = Settings.from_env({}).retrieval
    assert defaults.title_weight > 0
    assert defaults.coverage_weight > 0


@pytest.mark.parametrize(
    ("value", "grounded"),
    [("", True), ("1", True), ("on", True), ("0", False), ("off", False), ("False", False)],
)
def test_grounded_only_is_on_unless_switched_off(value: str, grounded: bool) -> None:
    env = {"ASSISTANT_LLM_BASE_URL": "http://127.0.0.1:8080/v1", "ASSISTANT_GROUNDED_ONLY": value}
    assert Settings.from_env(env).llm.grounded_only is grounded


def test_a_mistyped_grounded_only_is_an_error_not_off() -> None:
    with pytest.raises(ConfigError, match="ASSISTANT_GROUNDED_ONLY"):
        Settings.from_env({"ASSISTANT_GROUNDED_ONLY": "of"})


# Settings that passed validation and broke later (D12 of docs/hardening.md; the budget, D5)

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


def test_the_budget_is_a_validated_setting() -> None:
    """D5: ASSISTANT_LLM_TOTAL_TIMEOUT is read, and refused when not finite and in range."""
    env = {"ASSISTANT_LLM_TOTAL_TIMEOUT": "30"}
    assert Settings.from_env(env).llm.total_timeout == 30
    for bad in ("nan", "inf", "0", "-1", "99999"):
        with pytest.raises(ConfigError, match="ASSISTANT_LLM_TOTAL_TIMEOUT"):
            Settings.from_env({"ASSISTANT_LLM_TOTAL_TIMEOUT": bad})
