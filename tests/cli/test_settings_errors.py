"""A bad setting stops ``search`` and ``ingest.py`` before any work: exit 2 naming it (D12)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from assistant.cli.ingest import ingest_main
from assistant.cli.search import main as search_main


@pytest.mark.parametrize(
    ("name", "value"), [("ASSISTANT_LLM_TIMEOUT", "nan"), ("ASSISTANT_AUTH", "alice:")]
)
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
