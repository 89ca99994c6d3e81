"""Commit records: what each committed ingest wrote and deleted, kept beside its generation.

A reader one (or a few) generations behind reads the records from its
generation to the committed one and fetches only the rows they name, instead
of reloading the whole collection. Locally each record is a small JSON file
``INDEX/commits/<generation>.json``, written (atomically) before the
generation file changes; with a Chroma server it is one row of a side
collection (`assistant.index.chroma`), written before the collection's
generation changes. Either way a reader that sees a generation can find its
record, and one that finds none reloads in full.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path

from assistant.config import StoreSettings
from assistant.types import IndexChanges

__all__ = [
    "KEEP_RECORDS",
    "decode_changes",
    "encode_changes",
    "read_change_file",
    "write_change_file",
]

logger = logging.getLogger(__name__)

# Records kept: a reader further behind than this reloads in full anyway.
KEEP_RECORDS = 32
_SAFE = re.compile(r"^[0-9a-zA-Z_-]{1,80}$")


def encode_changes(changes: IndexChanges) -> str:
    """Return the JSON form of ``changes``."""
    return json.dumps(
        {
            "generation": changes.generation,
            "previous": changes.previous,
            "documents": dict(changes.documents),
            "upserted": list(changes.upserted),
            "deleted": list(changes.deleted),
        },
        ensure_ascii=False,
    )


def decode_changes(raw: str) -> IndexChanges | None:
    """Return the record in ``raw``, or None when it is not one (the reader reloads)."""
    try:
        data = json.loads(raw)
        return IndexChanges(
            generation=str(data["generation"]),
            previous=str(data["previous"]),
            documents={str(k): str(v) for k, v in data["documents"].items()},
            upserted=tuple(str(i) for i in data["upserted"]),
            deleted=tuple(str(i) for i in data["deleted"]),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        logger.warning("unreadable change record (%s): reloading in full", exc)
        return None


def _folder(settings: StoreSettings) -> Path:
    return settings.path / "commits"


def write_change_file(settings: StoreSettings, changes: IndexChanges) -> None:
    """Write the record of ``changes`` at once, and drop all but the newest records."""
    folder = _folder(settings)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{changes.generation}.json"
    tmp = folder / f".{changes.generation}.{os.getpid()}.tmp"
    tmp.write_text(encode_changes(changes), encoding="utf-8")
    os.replace(tmp, path)
    records = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    for old in records[:-KEEP_RECORDS]:
        old.unlink(missing_ok=True)


def read_change_file(settings: StoreSettings, generation: str) -> IndexChanges | None:
    """Return the record of ``generation``, or None when there is none."""
    if not _SAFE.match(generation):
        return None
    try:
        raw = (_folder(settings) / f"{generation}.json").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    changes = decode_changes(raw)
    return changes if changes is not None and changes.generation == generation else None
