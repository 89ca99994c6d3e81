"""The line under the title saying what is loaded: the corpus and the answer mode.

A user deciding whether to trust an answer should see which documents are behind it
and whether a language model writes the answers or the offline mode quotes passages.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from assistant.config import Settings
from assistant.session import indexed_at, readable_docs
from assistant.types import IndexSnapshot, User

__all__ = ["CorpusStatus", "answer_mode", "corpus_status", "header_markdown"]

logger = logging.getLogger(__name__)

OFFLINE_MODE = "offline: quoted passages"


@dataclass(frozen=True, slots=True)
class CorpusStatus:
    """What the header reports about the index; ``ingested`` is "" when unknown."""

    documents: int
    chunks: int
    ingested: str


def answer_mode(settings: Settings) -> str:
    """Return the model's name, or the offline mode's description."""
    if settings.llm.enabled:
        return f"model: {settings.llm.model}"
    return OFFLINE_MODE


def corpus_status(
    snapshot: IndexSnapshot, settings: Settings, user: User | None = None
) -> CorpusStatus:
    """Return what ``user`` may read (None: everything) and when the last ingest committed.

    Counts of documents and chunks a user may not read, and the time of an ingest
    that may have changed only those, would tell outsiders that restricted material
    exists, how big it is and when it changes (round three, finding D20): the time is
    shown only to a user who reads every document.
    """
    readable = set(readable_docs(snapshot, user))
    everything = len(readable) == len(snapshot.docs)
    return CorpusStatus(
        documents=len(readable),
        chunks=len(snapshot.chunks)
        if everything
        else sum(c.source in readable for c in snapshot.chunks),
        ingested=_last_ingest(settings) if everything else "",
    )


def _last_ingest(settings: Settings) -> str:
    # Every committed ingest rewrites the generation file; a Chroma server has none.
    if settings.store.host:
        return ""
    stamp = indexed_at(settings.store)
    if stamp is None:
        return ""
    return datetime.fromtimestamp(stamp, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def header_markdown(status: CorpusStatus | None, mode: str) -> str:
    """Return the header line, e.g. "19 documents · 412 chunks · ingested ... · offline"."""
    if status is None:
        corpus = "no index yet (run `python ingest.py`)"
    else:
        corpus = f"{_count(status.documents, 'document')} · {_count(status.chunks, 'chunk')}"
        if status.ingested:
            corpus += f" · last ingest {status.ingested}"
    return f"{corpus} · answers: {mode}"


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"
