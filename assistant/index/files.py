"""The index's own files and messages outside Chroma: the generation file and disk hints.

A local index directory holds Chroma's store in ``INDEX/chroma`` and, beside it,
``INDEX/generation``: a token rewritten (atomically) on every committed ingest,
which running readers compare on each question to know when to reload.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import resource
import shutil
from pathlib import Path

from assistant.config import StoreSettings

__all__ = [
    "damage_hint",
    "describe_location",
    "disk_hint",
    "generation_path",
    "read_generation",
    "write_generation",
]

logger = logging.getLogger(__name__)

_LOW_DISK_BYTES = 16 * 1024 * 1024
# SQLite's words for a database file it cannot read as one.
_DAMAGED = re.compile(r"malformed|not a database|corrupt", re.IGNORECASE)


def generation_path(settings: StoreSettings) -> Path:
    """Return the file whose content changes on every committed ingest."""
    return settings.path / "generation"


def read_generation(settings: StoreSettings) -> str:
    """Return the committed generation of a local index, "0" before the first commit.

    A file that cannot be read or decoded gives a token no snapshot holds, so readers
    reload (once per distinct content) instead of failing every question.
    """
    path = generation_path(settings)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return "0"
    except OSError as exc:
        logger.warning("cannot read %s (%s): reloading the index", path, exc.strerror or exc)
        return f"unreadable:{exc.errno}"
    try:
        return raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        logger.warning("%s is not a generation token: reloading the index", path)
        return f"unreadable:{hashlib.sha256(raw).hexdigest()[:16]}"


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
    if free < _LOW_DISK_BYTES:
        return f" (the disk holding the index is full or nearly full: {free // 1024} KiB free)"
    return _file_size_hint(settings.path)


def _file_size_hint(index: Path) -> str:
    """Name a file size limit (``ulimit -f``) that a file of the index has reached."""
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit == resource.RLIM_INFINITY:
        return ""
    largest = max((p.stat().st_size for p in index.rglob("*") if p.is_file()), default=0)
    if largest + _LOW_DISK_BYTES < limit:
        return ""
    return (
        f" (a file of the index reached this process's file size limit, {limit // 1024} KiB:"
        " raise `ulimit -f` for the ingest, or free the space the limit stands for)"
    )


def damage_hint(settings: StoreSettings, exc: BaseException) -> str:
    """Name the way out when Chroma says its local database file is damaged."""
    if settings.is_remote or not _DAMAGED.search(str(exc)):
        return ""
    return (
        " (the index database is damaged; `python ingest.py --rebuild PATH...` deletes "
        f"{settings.path / 'chroma'} and builds the index again)"
    )


def describe_location(settings: StoreSettings) -> str:
    """Return where the index is, for messages."""
    if settings.is_remote:
        scheme = "https" if settings.ssl else "http"
        return f"Chroma server {scheme}://{settings.host}:{settings.port}"
    return f"index directory {settings.path}"
