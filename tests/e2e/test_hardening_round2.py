"""Hardening, round two: the defects of ``shared/findings/hardening-2026-12.md`` (issue 14).

Each test is named after the guarantee a fix must give and carries the defect number
(D3, D4, ...) in its docstring; ``docs/hardening.md`` has a row per defect.
"""

from __future__ import annotations

import hashlib
import html as html_module
import io
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from gradio_client import Client
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from assistant.answering.citations import check_answer
from assistant.answering.extractive import stream_extractive
from assistant.answering.safety import neutralise_markdown
from assistant.cli.ingest import ingest_main
from assistant.cli.search import main as search_main
from assistant.config import Settings, StoreSettings, UISettings
from assistant.documents.loading import load_document
from assistant.errors import ConfigError, IndexNotFoundError
from assistant.index import ingest as ingest_module
from assistant.index.chroma import ChromaIndex, forget_cached_clients
from assistant.index.ingest import ingest
from assistant.index.plan import doc_key
from assistant.index.reader import IndexReader
from assistant.types import Answer, Citation, SearchFilters
from assistant.web.format import doc_link, sources_markdown
from assistant.web.ui import build_demo, make_responder
from tests.conftest import ROOT, free_port, run_ingest, run_python
from tests.conftest import FakeEmbedder as ConftestEmbedder
from tests.support.chromium import CHROMIUM, launched_chromium
from tests.support.hit_factory import make_hit
from tests.support.retrieval_helpers import FakeEmbedder as HelperEmbedder
from tests.support.retrieval_helpers import make_retriever, make_snapshot, policy_corpus
from tests.support.served_ui import app_settings, demo_launched, launched
from tests.support.ui_fakes import FakeService

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
    with demo_launched(demo, settings) as url:
        events = call_chat(url, ["loan \ud800 rate", [], [], 3])
    assert "event: complete" in events
    (call,) = service.calls
    call.question.encode("utf-8")
    assert call.question == "loan \ufffd rate"


def call_chat(url: str, data: list[object]) -> str:
    """POST to Gradio's ``/call/chat`` with ASCII-escaped JSON; return the event stream."""
    body = json.dumps({"data": data}).encode("ascii")
    request = urllib.request.Request(
        url + "/gradio_api/call/chat", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        event_id = json.load(response)["event_id"]
    with urllib.request.urlopen(url + f"/gradio_api/call/chat/{event_id}", timeout=60) as stream:
        return str(stream.read().decode("utf-8"))


# ---------------------------------------------------------------------------
# D15: smaller input-handling gaps
# ---------------------------------------------------------------------------


def run_search_in_process(argv: list[str], stdin: str = "") -> tuple[int, str, str, list[str]]:
    """Run ``search`` over the helper corpus; return code, stdout, stderr and questions searched."""
    embedder = HelperEmbedder()
    chunks, docs = policy_corpus()
    retriever = make_retriever(make_snapshot(chunks, docs, embedder=embedder), embedder)
    searched: list[str] = []

    class Recording:
        def snapshot(self) -> object:
            return retriever.snapshot()

        def search(self, question: str, **kwargs: object) -> object:
            searched.append(question)
            return retriever.search(question, **kwargs)  # type: ignore[arg-type]

    out, err = io.StringIO(), io.StringIO()
    code = search_main(
        argv,
        environ={},
        stdin=io.StringIO(stdin),
        stdout=out,
        stderr=err,
        searcher_factory=lambda _settings: Recording(),  # type: ignore[arg-type,return-value]
    )
    return code, out.getvalue(), err.getvalue(), searched


@pytest.mark.parametrize("question", ["", "   ", "\t\n"])
def test_an_empty_cli_question_is_a_usage_error_not_a_search(question: str) -> None:
    """D15: ``search ""`` exits 2 with the usage message and searches nothing."""
    for argv in (["search", question], ["search", "--json", question]):
        code, out, err, searched = run_search_in_process(argv)
        assert (code, out, searched) == (2, "", [])
        assert "give a question" in err


def test_a_jsonl_question_that_is_not_a_non_empty_string_is_an_error_line() -> None:
    """D15: ``null``, a list, a number or blanks are refused per line, never searched as text."""
    lines = [
        {"id": 1, "question": None},
        {"id": 2, "question": ["a"]},
        {"id": 3, "question": 5},
        {"id": 4, "question": "   "},
        {"id": 5, "question": "card replacement"},
    ]
    code, out, _, searched = run_search_in_process(
        ["search", "--json"], stdin="".join(json.dumps(line) + "\n" for line in lines)
    )
    answers = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [a["id"] for a in answers] == [1, 2, 3, 4, 5]
    assert all("question must be a non-empty string" in a["error"] for a in answers[:4])
    assert answers[4]["chunks"]
    assert searched == ["card replacement"]


def test_the_no_index_message_does_not_ask_for_a_restart() -> None:
    """D15: the chat picks up a new index on the next question, and says so."""
    service = FakeService(raise_on_ask=IndexNotFoundError("no collection"))
    respond = make_responder(service, settings=Settings())
    (messages,) = list(respond("anything?", []))
    text = str(messages[0].content)
    assert "python ingest.py" in text
    assert "restart the UI" not in text
    assert "next question" in text


def test_a_multi_line_front_matter_title_keeps_its_sources_entry_on_one_line(
    tmp_path: Path,
) -> None:
    """D15: a title with line breaks renders as one bold title line in Sources."""
    front = '---\ntitle: "Leave\\n\\nRules *for*\\n  staff"\n---\n'
    (tmp_path / "x.md").write_text(
        front + "# Leave rules\n\nStaff get 25 days.\n", encoding="utf-8"
    )
    document = load_document(tmp_path / "x.md", root=tmp_path, source="x.md")
    assert "\n" in document.meta.title  # the loader keeps what the file says
    hit = make_hit(1, "Staff get 25 days.", source="x.md", title=document.meta.title)
    rendered = MarkdownIt("commonmark").render(
        sources_markdown(Answer("q", "Staff get 25 days [1].", (hit,), (Citation(1, hit),)))
    )
    strong = re.findall(r"<strong>(.*?)</strong>", rendered, flags=re.S)
    assert strong[0] == "[1] Leave Rules *for* staff"
    # One paragraph for the title and its facts, one for the quoted snippet: none spilled.
    assert rendered.count("<p>") == 2
    assert re.search(
        r"<p><strong>\[1\] Leave Rules[^<]*</strong>[^<]*<a [^>]*>open section", rendered
    )


@pytest.fixture
def filter_app() -> Iterator[tuple[str, FakeService, list[tuple[str, str]]]]:
    """A UI whose catalog grows after start-up, as after an ingest."""
    service = FakeService()
    sources = [("loan-policy.md", "Loan Policy")]
    tags = ["loans"]
    settings = Settings(ui=UISettings(port=free_port()))
    demo = build_demo(
        service,
        settings=settings,
        sources=list(sources),
        tags=list(tags),
        catalog=lambda user: (sources, tags + (["hr"] if len(sources) > 1 else [])),
    )
    with demo_launched(demo, settings) as url:
        yield url, service, sources


def test_api_clients_can_filter_on_a_document_ingested_after_start_up(
    filter_app: tuple[str, FakeService, list[tuple[str, str]]],
) -> None:
    """D15: the filter accepts what the index holds now, not what it held at start-up."""
    url, service, sources = filter_app
    sources.append(("hr/new-policy.md", "New Policy"))
    client = Client(url, verbose=False)
    client.predict("Leave?", ["hr/new-policy.md"], ["hr"], 3, api_name="/chat")
    (call,) = service.calls
    assert call.filters == SearchFilters(sources=("hr/new-policy.md",), tags=("hr",))


def test_an_unknown_filter_value_gets_a_clear_message_and_no_search(
    filter_app: tuple[str, FakeService, list[tuple[str, str]]],
) -> None:
    """D15 control: a value the index does not hold is still refused, by name."""
    url, service, _ = filter_app
    client = Client(url, verbose=False)
    result = client.predict("Leave?", ["gone.md"], [], 3, api_name="/chat")
    assert "gone.md" in result[0]["content"]
    assert "not in the index" in result[0]["content"]
    # A source name is no tag: each list is checked against its own catalog.
    result = client.predict("Leave?", [], ["loan-policy.md"], 3, api_name="/chat")
    assert "loan-policy.md" in result[0]["content"]
    assert "not in the index" in result[0]["content"]
    assert service.calls == []


# ---------------------------------------------------------------------------
# D10: terminal escapes from documents and file names in readable CLI output
# ---------------------------------------------------------------------------

ESC_BODY = (
    "# Overtime \x1b]0;pwned-title\x07rules\n\n"
    "Overtime pay \x1b]52;c;ZWNobyBwd25lZA==\x07 needs a manager "
    "\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07 signature.\x1b[2J "
    "C1 csi \x9b31m red and a bell \x07 and a carriage return \r hides this.\n"
)
ESC_NAME = "over\x1b]0;name-title\x07time\x1b[31m.md"
ESC_FAILED = "bad\x1b[2J\x9bname.xyz"


def terminal_unsafe(text: str) -> list[str]:
    """Return the C0 (but newline and tab), DEL and C1 characters in ``text``."""
    return [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]


@pytest.fixture(scope="module")
def hostile_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("esc")
    docs = base / "docs"
    docs.mkdir()
    (docs / ESC_NAME).write_text(ESC_BODY, encoding="utf-8")
    (docs / ESC_FAILED).write_text("unsupported\n", encoding="utf-8")
    return docs, base / "idx"


@pytest.mark.parametrize("flags", [["--dry-run"], []])
def test_ingest_output_carries_no_control_characters_from_file_names(
    hostile_index: tuple[Path, Path], flags: list[str]
) -> None:
    """D10: the plan, the summary, FAILED lines and warnings show names with escapes."""
    docs, index = hostile_index
    done = run_ingest(str(docs), "--index", str(index), *flags)
    assert done.returncode == 0, done.stderr
    assert terminal_unsafe(done.stdout) == []
    assert terminal_unsafe(done.stderr) == []
    assert "over\\x1b]0;name-title\\x07time\\x1b[31m.md" in done.stdout
    assert "bad\\x1b[2J\\x9bname.xyz" in done.stdout


def test_search_output_carries_no_control_characters_from_documents(
    hostile_index: tuple[Path, Path],
) -> None:
    """D10: snippets, titles, sources and the trace reach the terminal escaped."""
    docs, index = hostile_index
    if not index.exists():
        assert run_ingest(str(docs), "--index", str(index)).returncode == 0
    done = run_search(["overtime manager signature", "--index", str(index), "--trace"])
    out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    assert done.returncode == 0, err
    assert terminal_unsafe(out) == []
    assert terminal_unsafe(err) == []
    assert "\\x1b]52;c;" in out  # shown, not swallowed: the admin can see what the file holds
    assert "over\\x1b]0;name-title" in out


def test_error_messages_carry_no_control_characters(capsys: pytest.CaptureFixture[str]) -> None:
    """D10: ``error: ...`` lines escape names that reach them (here a questions file)."""
    err = io.StringIO()
    code = search_main(
        ["eval", "/nonexistent/q\x1b]0;x\x07.jsonl"], environ={}, stderr=err, stdout=io.StringIO()
    )
    assert code == 2
    assert terminal_unsafe(err.getvalue()) == []
    assert "q\\x1b]0;x\\x07.jsonl" in err.getvalue()


# ---------------------------------------------------------------------------
# D14: an unreadable index or generation file
# ---------------------------------------------------------------------------


def fake_settings(index: Path) -> Settings:
    return replace(Settings(), store=StoreSettings(path=index))


def write_docs(docs: Path, files: dict[str, str]) -> Path:
    docs.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (docs / name).write_text(text, encoding="utf-8")
    return docs


@pytest.mark.parametrize("damage", ["garbage", "half"])
def test_rebuild_recovers_a_malformed_index_database(tmp_path: Path, damage: str) -> None:
    """D14: a damaged ``chroma.sqlite3`` names ``--rebuild``, and ``--rebuild`` recovers it."""
    docs = write_docs(tmp_path / "docs", TINY_CORPUS)
    index = tmp_path / "idx"
    assert run_ingest(str(docs), "--index", str(index)).returncode == 0
    database = index / "chroma" / "chroma.sqlite3"
    data = database.read_bytes()
    if damage == "half":
        database.write_bytes(data[: len(data) // 2])
    else:
        database.write_bytes(data[:4096] + os.urandom(16384) + data[4096 + 16384 :])

    broken = run_ingest(str(docs), "--index", str(index))
    assert broken.returncode == 1
    assert "--rebuild" in broken.stderr
    rebuilt = run_ingest(str(docs), "--index", str(index), "--rebuild", "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert sorted(json.loads(rebuilt.stdout)["documents"]["added"]) == sorted(TINY_CORPUS)
    found = run_search(["annual leave", "--index", str(index)])
    assert found.returncode == 0, found.stderr.decode(errors="replace")
    assert "leave.md" in found.stdout.decode("utf-8")


def test_rebuild_keeps_other_collections_of_a_readable_index(tmp_path: Path) -> None:
    """D14 control: a readable index is rebuilt through Chroma, not by deleting the folder."""
    docs = write_docs(tmp_path / "docs", TINY_CORPUS)
    settings = fake_settings(tmp_path / "idx")
    other = replace(settings, store=replace(settings.store, collection="other-corpus"))
    ingest([docs], settings=other, embedder=ConftestEmbedder())
    ingest([docs], settings=settings, embedder=ConftestEmbedder())
    ingest([docs], settings=settings, embedder=ConftestEmbedder(), rebuild=True)
    forget_cached_clients()
    kept = ChromaIndex(other.store, embedder_identity=ConftestEmbedder().identity, dimension=64)
    assert {c.source for c in kept.load_snapshot().chunks} == set(TINY_CORPUS)


@pytest.mark.parametrize("content", [b"\xff\xfe\x00garbage", b"\x80"])
def test_an_unreadable_generation_file_means_reload_not_a_crash(
    tmp_path: Path, content: bytes
) -> None:
    """D14: non-UTF-8 ``INDEX/generation`` makes the reader reload, never raise."""
    docs = write_docs(tmp_path / "docs", {"leave.md": TINY_CORPUS["leave.md"]})
    settings = fake_settings(tmp_path / "idx")
    embedder = ConftestEmbedder()
    reader = IndexReader(settings.store, embedder_identity=embedder.identity, dimension=64)
    ingest([docs], settings=settings, embedder=embedder)
    assert {c.source for c in reader.snapshot().chunks} == {"leave.md"}
    write_docs(docs, {"parking.md": TINY_CORPUS["parking.md"]})
    ingest([docs], settings=settings, embedder=embedder)
    (settings.store.path / "generation").write_bytes(content)

    reloaded = reader.snapshot()
    assert {c.source for c in reloaded.chunks} == {"leave.md", "parking.md"}
    assert reader.snapshot() is reloaded  # the same bad bytes: no reload on every question


# ---------------------------------------------------------------------------
# D4: a kill inside commit must not leave running readers on the old snapshot
# ---------------------------------------------------------------------------

KILL_IN_COMMIT = """
import os, signal, sys
from dataclasses import replace
from pathlib import Path
import assistant.index.chroma as chroma
from assistant.config import Settings, StoreSettings
from assistant.index.ingest import ingest
from tests.conftest import FakeEmbedder

if sys.argv[3] == "kill":
    # Dies after the collection says clean with the new generation, before the file.
    chroma.write_generation = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
settings = replace(Settings(), store=StoreSettings(path=Path(sys.argv[2])))
ingest([Path(sys.argv[1])], settings=settings, embedder=FakeEmbedder())
"""


def ingest_in_child(docs: Path, index: Path, mode: str) -> int:
    return run_python(KILL_IN_COMMIT, str(docs), str(index), mode).returncode


def committed_generation(index: Path) -> str:
    forget_cached_clients()
    store = ChromaIndex(
        StoreSettings(path=index), embedder_identity=ConftestEmbedder().identity, dimension=64
    )
    metadata = store._open(create=False).metadata or {}
    return str(metadata["generation"])


def test_after_a_kill_inside_commit_the_next_run_republishes_the_generation(
    tmp_path: Path,
) -> None:
    """D4: a normal (no-op) run after the kill makes the file equal the committed generation."""
    docs = write_docs(tmp_path / "docs", TINY_CORPUS)
    index = tmp_path / "idx"
    assert ingest_in_child(docs, index, "normal") == 0
    reader = IndexReader(
        StoreSettings(path=index), embedder_identity=ConftestEmbedder().identity, dimension=64
    )
    assert {c.source for c in reader.snapshot().chunks} == set(TINY_CORPUS)

    (docs / "parking.md").unlink()
    assert ingest_in_child(docs, index, "kill") == -9
    stale = (index / "generation").read_text(encoding="utf-8")
    assert committed_generation(index) != stale  # the window the finding describes

    assert ingest_in_child(docs, index, "normal") == 0  # finds nothing to do
    assert (index / "generation").read_text(encoding="utf-8") == committed_generation(index)
    assert {c.source for c in reader.snapshot().chunks} == {"leave.md"}
    assert ingest_in_child(docs, index, "normal") == 0
    assert (index / "generation").read_text(encoding="utf-8") == committed_generation(index)


# ---------------------------------------------------------------------------
# D3: a file edited during an ingest
# ---------------------------------------------------------------------------


def stored_rows(index: Path) -> list[dict[str, object]]:
    forget_cached_clients()
    store = ChromaIndex(
        StoreSettings(path=index), embedder_identity=ConftestEmbedder().identity, dimension=64
    )
    return [dict(metadata) for _, _, metadata in store._pages(include=["metadatas"])]


def test_a_file_edited_after_the_scan_and_reverted_is_reingested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D3: the stored key is the key of the bytes parsed, so the next run sees the revert."""
    docs = write_docs(tmp_path / "docs", TINY_CORPUS)
    settings = fake_settings(tmp_path / "idx")
    original = (docs / "leave.md").read_bytes()
    real_scan = ingest_module._scan

    def scan_then_edit(*args: object, **kwargs: object) -> object:
        scanned = real_scan(*args, **kwargs)  # type: ignore[arg-type]
        (docs / "leave.md").write_bytes(original + b"\nEDITEDMARKER holidays are doubled.\n")
        return scanned

    monkeypatch.setattr(ingest_module, "_scan", scan_then_edit)
    ingest([docs], settings=settings, embedder=ConftestEmbedder())
    monkeypatch.setattr(ingest_module, "_scan", real_scan)
    (docs / "leave.md").write_bytes(original)  # the edit is undone

    report = ingest([docs], settings=settings, embedder=ConftestEmbedder())
    assert report.changed == ("leave.md",)
    texts = {
        c.text
        for c in IndexReader(
            settings.store, embedder_identity=ConftestEmbedder().identity, dimension=64
        )
        .snapshot()
        .chunks
    }
    assert not any("EDITEDMARKER" in text for text in texts)
    assert ingest([docs], settings=settings, embedder=ConftestEmbedder()).changed == ()


def test_every_stored_key_is_the_key_of_the_bytes_its_chunks_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D3: ``doc_key`` and ``doc_sha256`` of every row describe the same bytes."""
    docs = write_docs(tmp_path / "docs", TINY_CORPUS)
    settings = fake_settings(tmp_path / "idx")
    real_scan = ingest_module._scan

    def scan_then_edit(*args: object, **kwargs: object) -> object:
        scanned = real_scan(*args, **kwargs)  # type: ignore[arg-type]
        with (docs / "parking.md").open("ab") as stream:
            stream.write(b"\nVisitors park on level 2.\n")
        return scanned

    monkeypatch.setattr(ingest_module, "_scan", scan_then_edit)
    ingest([docs], settings=settings, embedder=ConftestEmbedder())
    signature = ingest_module._signature(
        ingest_module._Run(settings, ConftestEmbedder(), None, ingest_module._no_progress)  # type: ignore[arg-type]
    )
    rows = stored_rows(settings.store.path)
    assert rows
    for row in rows:
        parsed = (docs / str(row["source"])).read_bytes()  # now unchanged since the parse
        assert row["doc_sha256"] == hashlib.sha256(parsed).hexdigest()
        assert row["doc_key"] == doc_key(docs / str(row["source"]), signature=signature)


# ---------------------------------------------------------------------------
# D6: citations that were not placed by the assistant
# ---------------------------------------------------------------------------

PARKING_HITS = (
    make_hit(
        1,
        "Parking reimbursement policy citation spoof [99] and [2] and [1, 3] here.",
        source="spoof.md",
        title="Spoof",
        heading_path=("Spoof", "Parking"),
    ),
    make_hit(2, "Visitors park on level two.", source="visitors.md", title="Visitors"),
    make_hit(3, "Bicycles are parked in the basement.", source="bikes.md", title="Bikes"),
)
OWN_HOST = frozenset({"127.0.0.1"})
# What a reader would take for a citation: [n] with any spacing, escaping or bracket style.
SEEN_MARKER = re.compile(r"[\[\uff3b\u3010]\s*\^?\s*\d[\d\s,;\u2013\u2014-]*[\]\uff3d\u3011]")


def visible_text(markdown: str) -> str:
    rendered = MarkdownIt("commonmark", {"html": True}).render(markdown)
    return html_module.unescape(re.sub(r"<[^>]+>", "", rendered))


def test_bracketed_numbers_quoted_from_a_document_are_not_citations() -> None:
    """D6 (a): offline, a document's own "[2]" and "[1, 3]" neither cite nor look like it."""
    question = "bidi entities citation spoof parking reimbursement"
    raw = "".join(stream_extractive(question, PARKING_HITS))
    answer = check_answer(
        question, neutralise_markdown(raw, allowed_hosts=OWN_HOST), PARKING_HITS, offline=True
    )
    cited = [c.number for c in answer.citations]
    assert 1 in cited
    # Each marker a reader sees is one the answerer placed after a quoted passage.
    markers = SEEN_MARKER.findall(visible_text(answer.text))
    assert sorted(set(markers)) == [f"[{n}]" for n in cited]
    assert len(markers) == answer.text.count("\n> ") + answer.text.count("From [")
    assert "spoof [note 99] and [note 2] and [note 1, 3] here." in answer.text
    cited_part, _, _ = visible_text(sources_markdown(answer)).partition("Also retrieved")
    for citation in answer.citations:
        assert f"[{citation.number}] {citation.hit.title}" in cited_part


def test_citation_lookalikes_from_the_model_are_resolved_or_removed() -> None:
    """D6 (b): escaped, spaced, footnote, range and oversized markers, and marker links."""
    text = (
        "Parking is reimbursed [1]. Escaped fake \\[9\\] here. Spaced [ 7 ] and [8 ] and "
        "[1000]. Linked [[1]](/doc/ok.md#annual-leave) and [\\[2\\]](/doc/other.md). "
        "Footnote [^9], range [1-9], fullwidth \uff3b7\uff3d. Spaced valid [ 2 ] and \\[3\\]."
    )
    safe = neutralise_markdown(text, allowed_hosts=OWN_HOST)
    answer = check_answer("q", safe, PARKING_HITS)
    seen = visible_text(answer.text)
    assert sorted(set(SEEN_MARKER.findall(seen))) == ["[1]", "[2]", "[3]"]
    assert "/doc/ok.md" not in answer.text
    assert "/doc/other.md" not in answer.text
    assert set(answer.invalid_citation_numbers) >= {7, 8, 9, 1000}
    assert [c.number for c in answer.citations] == [1, 2, 3]


@given(
    st.lists(
        st.sampled_from(
            [
                "[1]",
                "[ 2 ]",
                "\\[4\\]",
                "[^5]",
                "[2-3]",
                "[9-1]",
                "[1,4]",
                "[0]",
                "\uff3b3\uff3d",
                "\u30102\u3011",
            ]
        )
        | st.sampled_from(
            ["Parking ", "is ", "paid. ", "(", ")", "[x]", "[[", "]]", "\\", " ", "<", ">", '"t"']
        ),
        max_size=16,
    )
)
def test_every_marker_a_reader_sees_points_at_a_retrieved_source(pieces: list[str]) -> None:
    """D6: whatever the model writes, each visible [n] is a real citation within 1..n."""
    safe = neutralise_markdown("".join(pieces), allowed_hosts=OWN_HOST)
    answer = check_answer("q", safe, PARKING_HITS)
    cited = {c.number for c in answer.citations}
    for marker in SEEN_MARKER.findall(visible_text(answer.text)):
        assert re.fullmatch(r"\[[123]\]", marker), marker
        assert int(marker[1:-1]) in cited


# ---------------------------------------------------------------------------
# D13: indexed names with ":" or "\" open in the viewer
# ---------------------------------------------------------------------------

ODD_NAMES = {
    "colon:parking.md": "# Colon parking\n\nParking permits for colon staff.\n",
    "back\\slash.md": "# Backslash rules\n\nBackslash staff park on level three.\n",
    "HR: leave policy.md": "# HR leave\n\nStaff get 25 days of annual leave.\n",
    "javascript:alert('x').md": "# Script name\n\nA harmless document with a scary name.\n",
}


@pytest.fixture(scope="module")
def odd_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    base = tmp_path_factory.mktemp("odd")
    docs = write_docs(base / "docs", ODD_NAMES)
    (docs / "draft:secret.md").write_text("# Draft\n\nNever indexed.\n", encoding="utf-8")
    settings = app_settings(base / "idx")
    report = ingest(
        [docs / name for name in ODD_NAMES], settings=settings, embedder=ConftestEmbedder()
    )
    assert not report.problems
    with launched(settings, docs, ingest_first=False) as served:
        yield served.url, docs


def viewer_status(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        return error.code, ""


def test_every_indexed_source_opens_at_its_sources_link(odd_app: tuple[str, Path]) -> None:
    """D13: the "open section" link of each source with ":" or "\\" answers 200 with its text."""
    url, _ = odd_app
    for source, text in ODD_NAMES.items():
        link = doc_link(make_hit(1, "x", source=source, anchor="top"))
        status, page = viewer_status(url + link)
        assert status == 200, (source, link)
        assert html_module.escape(text.splitlines()[2]) in page


@pytest.mark.parametrize(
    "path",
    [
        "draft:secret.md",
        "draft%3Asecret.md",
        "..%5C..%5Cetc%5Cpasswd",
        "C:%5Cwindows",
        "a%5C..%5Cb",
    ],
)
def test_names_with_colons_or_backslashes_outside_the_catalog_stay_refused(
    odd_app: tuple[str, Path], path: str
) -> None:
    """D13 control: only catalog sources get the wider character set."""
    url, _ = odd_app
    assert viewer_status(f"{url}/doc/{path}")[0] == 404


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is missing")
def test_chromium_opens_the_viewer_links_of_odd_names(odd_app: tuple[str, Path]) -> None:
    """D13 in the real browser: Chromium follows each link as the Sources panel writes it."""
    url, _ = odd_app
    with launched_chromium() as browser:
        page = browser.new_page()
        for source, text in ODD_NAMES.items():
            link = doc_link(make_hit(1, "x", source=source, anchor="top"))
            response = page.goto(url + link, wait_until="load")
            assert response is not None
            assert response.status == 200, (source, link)
            assert text.splitlines()[2] in page.inner_text("body")
