"""What ``search`` does with questions it cannot search: invalid Unicode (D11), empty or
non-string questions (D15), on the command line and in JSON lines.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from assistant.cli.search import main as search_main
from tests.conftest import ingest_in_process
from tests.support.retrieval_helpers import FakeEmbedder as HelperEmbedder
from tests.support.retrieval_helpers import make_retriever, make_snapshot, policy_corpus
from tests.support.tiny_corpus import TINY_CORPUS, run_search


@pytest.fixture(scope="module")
def real_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny index built by ``ingest.py`` (in process) with the packaged model."""
    base = tmp_path_factory.mktemp("real")
    docs = base / "docs"
    docs.mkdir()
    for name, text in TINY_CORPUS.items():
        (docs / name).write_text(text, encoding="utf-8")
    done = ingest_in_process(str(docs), "--index", str(base / "idx"))
    assert done.returncode == 0, done.stderr
    return base / "idx"


@pytest.mark.slow
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


@pytest.mark.slow
def test_an_invalid_utf8_argument_is_searched_without_a_traceback(real_index: Path) -> None:
    """D11: ``search "$(printf 'leave \\xff')"`` answers (the bad byte becomes U+FFFD)."""
    done = run_search([b"annual leave \xff", "--index", str(real_index)])
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr
    assert "leave.md" in done.stdout.decode("utf-8")


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
