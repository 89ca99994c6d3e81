"""What a user may see outside search: the one access check besides retrieval's.

Retrieval filters hits by audience (`assistant.retrieval.view`); everything else a door
shows about the corpus asks here: the catalogue of sources and tags (the filters, the
command line's names), the document counts of the header, the viewer's roots (from the
last snapshot that loaded, so the viewer keeps working when the index breaks, finding D8)
and whether a document may be opened as it is on disk now.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from assistant.config import StoreSettings
from assistant.documents.access import audience_now
from assistant.documents.origin import read_origins
from assistant.errors import AssistantError, DocumentError
from assistant.index.files import generation_path
from assistant.types import DocMeta, Document, IndexSnapshot, User

__all__ = ["LastSnapshot", "catalog_of", "indexed_at", "may_open_now", "readable_docs"]

logger = logging.getLogger(__name__)


def readable_docs(snapshot: IndexSnapshot, user: User | None) -> dict[str, DocMeta]:
    """Return the snapshot's documents ``user`` may read (None: every document)."""
    return {
        source: meta
        for source, meta in snapshot.docs.items()
        if user is None or user.may_read(meta.audience)
    }


def catalog_of(
    snapshot: IndexSnapshot, user: User | None = None
) -> tuple[list[tuple[str, str]], list[str]]:
    """Return the ``(source, title)`` pairs and the tags ``user`` may see (None: all)."""
    docs = readable_docs(snapshot, user)
    sources = sorted((source, meta.title or source) for source, meta in docs.items())
    tags = sorted({tag for meta in docs.values() for tag in meta.tags})
    return sources, tags


class LastSnapshot:
    """The last snapshot that loaded: the viewer's catalog when the index breaks (D8)."""

    def __init__(self, source: Callable[[], IndexSnapshot]) -> None:
        self._source = source
        self._last: IndexSnapshot | None = None
        self._lock = threading.Lock()

    def readable_roots(self, user: User) -> Mapping[str, str]:
        """Return source -> the folder it was ingested from, for the sources ``user`` may read.

        Raises:
            AssistantError: No snapshot has loaded yet.
        """
        try:
            snapshot = self._source()
            with self._lock:
                self._last = snapshot
        except AssistantError:
            with self._lock:
                snapshot_or_none = self._last
            if snapshot_or_none is None:
                raise
            snapshot = snapshot_or_none
        return {
            source: root
            for source, root in snapshot.roots.items()
            if user.may_read(snapshot.docs[source].audience if source in snapshot.docs else ())
        }


def may_open_now(
    document: Document, *, file: Path, root: Path, user: User, default_audience: tuple[str, ...]
) -> bool:
    """Return whether ``user`` may read ``document`` as its file and rules say now.

    The index may be older than an edit that narrowed the audience; what cannot be
    decided (an unreadable rules file) is refused.
    """
    try:
        # A connector's sources file decides first, as in the ingest (documents.origin).
        origin = read_origins(root).get(document.source)
        if origin is not None and origin.audience is not None:
            return user.may_read(origin.audience)
        audience = audience_now(
            document.meta.audience,
            root=root,
            path=file,
            source=document.source,
            default=default_audience,
        )
    except DocumentError as exc:
        logger.warning("cannot tell who may read %s: %s", document.source, exc.reason)
        return False
    return user.may_read(audience)


def indexed_at(store: StoreSettings) -> float | None:
    """Return when the index was last written (a POSIX time), or None when it cannot be told."""
    try:
        return generation_path(store).stat().st_mtime
    except OSError:
        return None
