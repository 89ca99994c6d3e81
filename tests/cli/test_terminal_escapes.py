"""Terminal escapes from documents and file names reach readable CLI output escaped (D10)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from assistant.cli.search import main as search_main
from tests.conftest import run_ingest
from tests.support.tiny_corpus import run_search

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
