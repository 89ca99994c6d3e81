"""Find input files and load each one into a `Document`.

Limits, enforced per file (a violation raises `DocumentError` naming the file):

- at most `MAX_FILE_BYTES` (50 MB) per file;
- text files must be UTF-8, or confidently detected by charset-normalizer
  (a warning is logged), and must hold no NUL bytes;
- no line may be longer than 1,000,000 characters;
- a symlink must not point outside its root.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from assistant.documents.base import fallback_title
from assistant.documents.sandbox import Sandbox, parse_in_process
from assistant.errors import ConfigError, DocumentError, EmptyDocumentError
from assistant.types import MAX_TITLE_CHARS, Document, shorten_heading

__all__ = [
    "MAX_FILE_BYTES",
    "SUPPORTED_SUFFIXES",
    "check_file",
    "discover",
    "load_document",
    "read_file",
]

logger = logging.getLogger(__name__)

MAX_FILE_BYTES = 50 * 1024 * 1024

# Suffix -> kind; each kind is a module of this package with a `load` function.
_KINDS = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
}
SUPPORTED_SUFFIXES: frozenset[str] = frozenset(_KINDS)


def discover(roots: Sequence[Path]) -> list[tuple[Path, Path]]:
    """List every non-hidden file under the given roots, as (root, file) pairs.

    A root may be a single file; its parent directory is then its root.
    Unsupported file types are listed too, so the caller can report them.
    Symlinked directories are not followed.

    Args:
        roots: Directories or files to ingest.

    Returns:
        Sorted, de-duplicated (root, file) pairs.

    Raises:
        ConfigError: A root does not exist.
    """
    pairs: set[tuple[Path, Path]] = set()
    for root in roots:
        if root.is_file():
            pairs.add((root.parent, root))
        elif root.is_dir():
            pairs.update((root, file) for file in _walk(root))
        else:
            raise ConfigError(f"data path does not exist or is not a file/directory: {root}")
    return sorted(pairs)


def _walk(root: Path) -> list[Path]:
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        files.extend(Path(dirpath, f) for f in filenames if not f.startswith("."))
    return files


def load_document(
    path: Path,
    *,
    root: Path,
    source: str | None = None,
    data: bytes | None = None,
    sandbox: Sandbox | None = None,
) -> Document:
    """Read and parse one file.

    Args:
        path: The file to load.
        root: The directory it was found under; ``source`` is relative to it.
        source: The document's identity; defaults to the POSIX path relative to ``root``.
        data: The file's bytes, already read with `read_file` (a caller that also
            hashes them); read here when None.
        sandbox: Parse in its helper process, within its time and memory budget
            (an ingest of untrusted files); in this process when None.

    Returns:
        The parsed document.

    Raises:
        EmptyDocumentError: The file holds no text (blank, or only front matter).
        DocumentError: The file is unsupported, unreadable, too large, not
            text, corrupt, or escapes its root; the message names the file.
    """
    if source is None:
        source = Path(os.path.relpath(path, root)).as_posix()
    kind = _kind(path, source=source)
    if data is None:
        data = read_file(path, root=root, source=source)
    if not data.strip():
        raise EmptyDocumentError(source, "file is empty (no text)")
    parse = sandbox.parse if sandbox is not None else parse_in_process
    extracted = parse(kind, data, source=source, fallback=fallback_title(path.stem))
    if not any(section.blocks for section in extracted.sections):
        raise EmptyDocumentError(source, "no text found in the file")
    title = shorten_heading(extracted.meta.title, MAX_TITLE_CHARS)
    return Document(
        source=source,
        root=str(root.resolve()),
        kind=kind,
        text=extracted.text,
        sha256=hashlib.sha256(data).hexdigest(),
        meta=dataclasses.replace(extracted.meta, title=title),
        sections=extracted.sections,
        page_starts=extracted.page_starts,
    )


def check_file(path: Path, *, root: Path, source: str) -> Path:
    """Refuse, without reading it, a file that cannot be a policy document.

    Returns:
        The file's resolved path.

    Raises:
        DocumentError: Unsupported type, not a regular file (a FIFO or device
            would never end), a symlink leaving ``root``, or over the size limit.
    """
    _kind(path, source=source)
    try:
        real = path.resolve(strict=True)
        if not real.is_relative_to(root.resolve()):
            raise DocumentError(source, f"symlink points outside the data directory ({real})")
        status = real.stat()
    except RuntimeError as exc:  # Path.resolve's "Symlink loop from ..."
        raise DocumentError(source, "symlink loop (the link never reaches a file)") from exc
    except OSError as exc:
        raise DocumentError(source, f"cannot read file: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(status.st_mode):
        raise DocumentError(source, "not a regular file (a directory, pipe, device or socket)")
    if status.st_size > MAX_FILE_BYTES:
        raise DocumentError(source, f"file is larger than 50 MB ({status.st_size:,} bytes)")
    return real


def _kind(path: Path, *, source: str) -> str:
    suffix = path.suffix.lower()
    kind = _KINDS.get(suffix)
    if kind is None:
        supported = ", ".join(sorted(SUPPORTED_SUFFIXES))
        shown = suffix or "(no extension)"
        raise DocumentError(source, f"unsupported file type '{shown}' (supported: {supported})")
    return kind


def read_file(path: Path, *, root: Path, source: str) -> bytes:
    """Return the bytes of a file that passes `check_file`.

    Raises:
        DocumentError: As `check_file`, or the file cannot be read.
    """
    real = check_file(path, root=root, source=source)
    try:
        return real.read_bytes()
    except OSError as exc:
        raise DocumentError(source, f"cannot read file: {exc.strerror or exc}") from exc
