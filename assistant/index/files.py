"""The index's own files and messages outside Chroma: the generation file and disk hints.

A local index directory holds Chroma's store in ``INDEX/chroma`` and, beside it,
``INDEX/generation``: a token rewritten (atomically) on every committed ingest,
which running readers compare on each question to know when to reload.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from assistant.config import StoreSettings

__all__ = [
    "describe_location",
    "disk_hint",
    "generation_path",
    "read_generation",
    "write_generation",
]

_LOW_DISK_BYTES = 16 * 1024 * 1024


def generation_path(settings: StoreSettings) -> Path:
    """Return the file whose content changes on every committed ingest."""
    return settings.path / "generation"


def read_generation(settings: StoreSettings) -> str:
    """Return the committed generation of a local index, "0" before the first commit."""
    try:
        return generation_path(settings).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return "0"


def write_generation(settings: StoreSettings, generation: str) -> None:
    """Replace the generation file at once, so a reader never sees half of it."""
    path = generation_path(settings)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(generation, encoding="utf-8")
    os.replace(tmp, path)


def disk_hint(settings: StoreSettings) -> str:
    """Name a full disk: Chroma's own message for it can be "Error in compaction"."""
    if settings.is_remote:
        return ""
    try:
        free = shutil.disk_usage(settings.path).free
    except OSError:
        return ""
    if free >= _LOW_DISK_BYTES:
        return ""
    return f" (the disk holding the index is full or nearly full: {free // 1024} KiB free)"


def describe_location(settings: StoreSettings) -> str:
    """Return where the index is, for messages."""
    if settings.is_remote:
        scheme = "https" if settings.ssl else "http"
        return f"Chroma server {scheme}://{settings.host}:{settings.port}"
    return f"index directory {settings.path}"
