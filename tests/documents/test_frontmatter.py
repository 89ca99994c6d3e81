"""YAML front matter: metadata fields and clear errors."""

from __future__ import annotations

import pytest

from assistant.documents.frontmatter import parse_front_matter, split_front_matter
from assistant.errors import DocumentError
from assistant.types import DocMeta


def _meta(src: str) -> DocMeta:
    front = split_front_matter(src)
    assert front is not None
    return parse_front_matter(front, source="policy.md")


def test_all_fields_dates_and_tags() -> None:
    meta = _meta(
        "---\ntitle: Loan Policy\neffective: 2024-03-01\nlast_updated: '2024/05/06'\n"
        "version: 1.0\nowner: HR Team\ntags: Loans, HR , loans\nurl: https://x/y\n"
        "supersedes: [old-loans.md, older.md]\nunknown: 3\n---\n# Body\n"
    )
    assert meta == DocMeta(
        title="Loan Policy",
        effective_date="2024-03-01",
        updated_date="2024-05-06",
        version="1.0",
        owner="HR Team",
        tags=("loans", "hr"),
        url="https://x/y",
        supersedes="old-loans.md, older.md",
    )


def test_date_key_and_list_tags() -> None:
    meta = _meta("---\ndate: 2023-12-31 10:00:00\ntags: [Travel, EXPENSES]\n---\n")
    assert meta.effective_date == "2023-12-31"
    assert meta.tags == ("travel", "expenses")


def test_body_offset_and_line() -> None:
    src = "---\na: 1\n---\n# Hi\n"
    front = split_front_matter(src)
    assert front is not None
    assert src[front.body_start :] == "# Hi\n"
    assert front.body_line == 3


@pytest.mark.parametrize("src", ["# No front matter\n", "---\nnever closed\n", "---"])
def test_no_front_matter(src: str) -> None:
    assert split_front_matter(src) is None


@pytest.mark.parametrize(
    ("src", "reason"),
    [
        ("---\ntitle: [unclosed\n---\n", "invalid YAML front matter: line 3"),
        ("---\n- a\n- b\n---\n", "front matter must be a mapping of keys, got a list"),
        ("---\nx: &a [1]\ny: *a\n---\n", "line 2: YAML anchors and aliases are not allowed"),
        ("---\neffective_date: soon\n---\n", "'effective_date' is not a date (YYYY-MM-DD): 'soon'"),
        ("---\nbig: '" + "x" * 70_000 + "'\n---\n", "front matter is larger than 64 KB"),
    ],
)
def test_invalid_front_matter_names_file_and_problem(src: str, reason: str) -> None:
    with pytest.raises(DocumentError) as info:
        _meta(src)
    assert info.value.source == "policy.md"
    assert reason in str(info.value)
    assert str(info.value).startswith("policy.md: ")


def test_python_tags_are_not_constructed() -> None:
    with pytest.raises(DocumentError, match="invalid YAML"):
        _meta("---\nx: !!python/object/apply:os.system ['echo hi']\n---\n")
