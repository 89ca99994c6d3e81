"""Heading paths are exact, for every format: each chunk names the section its text is in.

Over every sample policy (Markdown, text, HTML, PDF, DOCX) and the pipeline
fixtures, chunked as the ingest chunks them (`check_heading_paths`):

- a chunk's heading path ends with the heading of the innermost section that
  holds all of its text (a section holding its subsections), and is that
  section's path or a tail of it (leading ancestors go when a path is too long);
- no heading of the document stands as a line of a chunk's body unless the
  chunk's path names it.

`tests/chunking/test_invariants.py` checks the same on generated documents.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.chunking.chunker import chunk_document
from assistant.config import ChunkingSettings
from assistant.documents.loading import discover, load_document
from assistant.errors import EmptyDocumentError
from assistant.tokens import get_tokenizer
from tests.support.chunk_invariants import check_heading_paths
from tests.support.paths import FIXTURES, ROOT

ROOTS = [
    ROOT / "data" / "policies",
    FIXTURES / "pipeline",
]
FILES = discover(ROOTS)
SETTINGS = ChunkingSettings()
TOKENIZER = get_tokenizer(SETTINGS.encoding)


@pytest.mark.parametrize(("root", "path"), FILES, ids=[p.name for _, p in FILES])
def test_heading_paths_name_the_section_of_every_chunk(root: Path, path: Path) -> None:
    try:
        doc = load_document(path, root=root)
    except EmptyDocumentError:
        pytest.skip(f"{path.name} holds no text")
    chunks = chunk_document(doc, settings=SETTINGS, tokenizer=TOKENIZER)
    check_heading_paths(doc, chunks)
    # Stricter than the position check: no line of a body reads as any heading of the
    # document (a loader that also emitted a heading as a paragraph would fail here).
    headings = {s.heading_path[-1] for s in doc.sections if s.level > 0}
    for chunk in chunks:
        lines = (line.strip().lstrip("#").strip() for line in chunk.body.splitlines())
        stray = [line for line in lines if line in headings and line not in chunk.heading_path]
        assert not stray, f"{chunk.chunk_id} ({chunk.breadcrumb}) has heading lines {stray}"


def test_every_format_is_covered() -> None:
    assert {path.suffix for _, path in FILES} >= {".md", ".txt", ".html", ".pdf", ".docx"}
