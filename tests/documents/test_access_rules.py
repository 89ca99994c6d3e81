"""Audience rules never silently leave a document public (issue 27, D4).

Each case of the red team's reproduction is ingested for real (fake embedder) and the
stored audiences are read back from the index: a rule either takes effect, or the
document is refused naming the file (and line), or the ingest warns.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from assistant.documents.access import parse_rules
from assistant.index.ingest import ingest
from tests.conftest import FakeEmbedder
from tests.test_access import audiences, settings_for, write


def _ingest(root: Path, index: Path) -> tuple[dict[str, tuple[str, ...] | None], dict[str, str]]:
    settings = settings_for(index)
    report = ingest([root], settings=settings, embedder=FakeEmbedder())
    problems = {p.source: p.reason for p in report.problems}
    return audiences(settings), problems


def test_gitignore_style_folder_patterns_take_effect(tmp_path: Path) -> None:
    """``hr/`` and ``board`` cover the folders they name, as in .gitignore."""
    root = write(
        tmp_path / "c",
        {
            "hr/pay.md": "# HR Pay\n\nHRPAYMARK.\n",
            "hr/deep/er/notes.md": "# Notes\n\nDEEPMARK.\n",
            "board/minutes.md": "# Minutes\n\nBOARDMARK.\n",
            "boardroom.md": "# Boardroom\n\nBooking rules.\n",
            "open.md": "# Open\n\nPublic.\n",
        },
    )
    (root / ".access").write_text("hr/ -> hr\nboard -> board\n")
    stored, problems = _ingest(root, tmp_path / "idx")
    assert problems == {}
    assert stored == {
        "hr/pay.md": ("hr",),
        "hr/deep/er/notes.md": ("hr",),
        "board/minutes.md": ("board",),
        "boardroom.md": (),  # a folder name is not a prefix of other names
        "open.md": (),
    }


def test_a_nested_access_file_stops_its_documents_naming_it(tmp_path: Path) -> None:
    root = write(
        tmp_path / "c",
        {
            "exec/plan.md": "# Plan\n\nEXECMARK.\n",
            "exec/sub/x.md": "# X\n\nX.\n",
            "a.md": "# A\n\nA.\n",
        },
    )
    (root / "exec" / ".access").write_text("** -> execs\n")
    stored, problems = _ingest(root, tmp_path / "idx")
    assert set(stored) == {"a.md"}
    assert set(problems) == {"exec/plan.md", "exec/sub/x.md"}
    assert str(root / "exec" / ".access") in problems["exec/plan.md"]
    assert "not ingested" in problems["exec/plan.md"]


@pytest.mark.parametrize(
    "key",
    ["Audience", "AUDIENCE", "Access", "\uff41udience", "\u0430udience", "\u0430cc\u0435ss"],
)
def test_a_front_matter_key_that_reads_as_audience_is_refused(tmp_path: Path, key: str) -> None:
    """Capitalised, full-width or Cyrillic look-alike keys fail the file, naming the line."""
    root = write(
        tmp_path / "c",
        {
            "upper.md": f"---\ntitle: Upper\n{key}: [hr]\n---\n# Upper\n\nUPPERMARK.\n",
            "b.md": "# B\n\nB.\n",
        },
    )
    stored, problems = _ingest(root, tmp_path / "idx")
    assert set(stored) == {"b.md"}
    assert "front matter line 3" in problems["upper.md"]


def test_a_single_file_from_a_ruled_folder_is_refused(tmp_path: Path) -> None:
    root = write(tmp_path / "c", {"hr/pay.md": "# HR Pay\n\nHRPAYMARK.\n"})
    (root / ".access").write_text("hr/** -> hr\n")
    settings = settings_for(tmp_path / "idx")
    report = ingest([root / "hr" / "pay.md"], settings=settings, embedder=FakeEmbedder())
    (problem,) = report.problems
    assert str(root / ".access") in problem.reason
    assert audiences(settings) == {}


def test_a_rule_that_matches_nothing_is_a_warning_naming_file_and_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = write(tmp_path / "c", {"hr/pay.md": "# HR Pay\n\nPay.\n"})
    (root / ".access").write_text("hr/** -> hr\n# typo below\nHR/** -> hr\nboard/*.pdf -> board\n")
    with caplog.at_level(logging.WARNING, logger="assistant.index.ingest"):
        stored, _ = _ingest(root, tmp_path / "idx")
    assert stored == {"hr/pay.md": ("hr",)}
    assert f"{root / '.access'}: line 3: 'HR/** -> hr' matches no document" in caplog.text
    assert "line 4" in caplog.text
    assert "line 1" not in caplog.text


def test_wildcard_rules_keep_their_meaning() -> None:
    rules = parse_rules("** -> staff\n*.pdf -> board\nhr/* -> hr\n", name="a")
    assert rules.audience_of("x.pdf") == ("board",)
    assert rules.audience_of("sub/x.pdf") == ("staff",)
    assert rules.audience_of("hr/a.md") == ("hr",)
    assert rules.audience_of("hr/a/b.md") == ("staff",)


def test_a_single_file_takes_the_rules_of_its_own_folder(tmp_path: Path) -> None:
    """Found on the way: the rules of a single file's folder were read and then not used."""
    root = write(tmp_path / "c", {"pay.md": "# HR Pay\n\nHRPAYMARK.\n"})
    (root / ".access").write_text("pay.md -> hr\n")
    settings = settings_for(tmp_path / "idx")
    report = ingest([root / "pay.md"], settings=settings, embedder=FakeEmbedder())
    assert report.problems == ()
    assert audiences(settings) == {"pay.md": ("hr",)}
