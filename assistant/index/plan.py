"""Decide what an ingest must do: which documents are new, changed, unchanged or gone.

A document is unchanged when every chunk stored for it carries the same
``doc_key`` (hash of the file's bytes and of everything that shapes its chunks)
and the stored chunk IDs are exactly ``source#0 .. source#n-1``. Anything else,
including the half-written state a killed ingest leaves, counts as changed, so
rerunning converges to a clean ingest's state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from assistant.documents.origin import Origin
from assistant.types import Problem, StoredDocument, chunk_id

__all__ = ["Candidate", "IngestPlan", "doc_key", "is_whole", "key_of", "make_plan"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A file found under a root, with the key its chunks would be stored under."""

    root: Path
    path: Path
    source: str
    doc_key: str
    # The access file's audience for it (None: no rule matched), part of doc_key.
    rule_audience: tuple[str, ...] | None = None
    # Its entry in the root's sources file (a connector's title, link, audience), part of doc_key.
    origin: Origin | None = None


@dataclass(frozen=True, slots=True)
class IngestPlan:
    """What one ingest run will do."""

    added: tuple[Candidate, ...]
    changed: tuple[Candidate, ...]
    unchanged: tuple[Candidate, ...]
    removed: tuple[StoredDocument, ...]
    problems: tuple[Problem, ...]

    @property
    def to_process(self) -> tuple[Candidate, ...]:
        """Return the documents that must be parsed, chunked and embedded."""
        return self.added + self.changed


def doc_key(path: Path, *, signature: str) -> str:
    """Return the key that changes when the file or the chunking pipeline changes.

    The file is hashed in a stream, so a huge file costs no memory here (the
    loader refuses it by size later).

    Raises:
        OSError: The file cannot be read.
    """
    with path.open("rb") as stream:
        digest = hashlib.file_digest(stream, "sha256")
    digest.update(b"\0" + signature.encode("utf-8"))
    return digest.hexdigest()


def key_of(data: bytes, *, signature: str) -> str:
    """Return `doc_key` of a file holding ``data``: the key of the bytes actually parsed."""
    return hashlib.sha256(data + b"\0" + signature.encode("utf-8")).hexdigest()


def is_intact(stored: StoredDocument, key: str) -> bool:
    """Return whether ``stored`` is exactly what a clean ingest with ``key`` leaves."""
    expected = {chunk_id(stored.source, i) for i in range(stored.chunk_count)}
    return stored.doc_keys == {key} and stored.chunk_ids == expected


def is_whole(stored: StoredDocument) -> bool:
    """Return whether ``stored`` is what a clean ingest leaves, whatever its key."""
    return len(stored.doc_keys) == 1 and is_intact(stored, next(iter(stored.doc_keys)))


def make_plan(
    candidates: Sequence[Candidate],
    stored: Mapping[str, StoredDocument],
    *,
    roots: Sequence[Path],
    prune: bool,
    problems: Sequence[Problem] = (),
) -> IngestPlan:
    """Classify candidates against what the index holds.

    Documents stored from one of ``roots`` that are no longer there are
    removed; with ``prune``, so are documents from any other root, so the
    index mirrors exactly the given roots. Files that failed to read stay as
    they were stored.
    """
    added, changed, unchanged = [], [], []
    for candidate in candidates:
        previous = stored.get(candidate.source)
        if previous is None:
            added.append(candidate)
        elif is_intact(previous, candidate.doc_key):
            unchanged.append(candidate)
        else:
            changed.append(candidate)
    seen = {c.source for c in candidates} | {p.source for p in problems}
    scanned = {str(root) for root in roots}
    removed = tuple(
        doc
        for source, doc in sorted(stored.items())
        if source not in seen and (prune or doc.root in scanned)
    )
    return IngestPlan(tuple(added), tuple(changed), tuple(unchanged), removed, tuple(problems))
