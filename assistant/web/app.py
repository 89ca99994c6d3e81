"""Wire the real parts into the web UI: index reader, retriever, assistant, viewer.

`build_app` is what `assistant.cli.serve` (``ui.py``) calls. It opens nothing per user: one
`IndexReader` (which reloads after a later ingest), one `Retriever` and one
assistant serve every session; each request runs as the user its login (or a
trusted proxy) names, and sees only the documents that user may read. A missing
index is not fatal here; the chat tells the user to run ``python ingest.py``, and
the viewer serves only the sources of the last snapshot it could load (none
before the first).
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from assistant.config import Settings
from assistant.errors import AssistantError
from assistant.protocols import Embedder, Searcher
from assistant.types import Chunk, IndexSnapshot, User
from assistant.users import Directory, load_directory
from assistant.web.examples import pick_examples
from assistant.web.header import answer_mode, corpus_status, header_markdown
from assistant.web.ui import build_demo, launch
from assistant.web.viewer import DocumentViewer

if TYPE_CHECKING:
    import gradio as gr

__all__ = ["DEFAULT_DOC_ROOTS", "WebApp", "build_app", "catalog_of"]

logger = logging.getLogger(__name__)

DEFAULT_DOC_ROOTS = (Path("data/policies"),)


@dataclass(frozen=True, slots=True)
class WebApp:
    """The chat UI and the document viewer, ready to serve."""

    demo: gr.Blocks
    viewer: DocumentViewer
    settings: Settings
    directory: Directory = field(default_factory=Directory)

    def launch(self, *, share: bool = False) -> str:
        """Start serving in the background and return the local URL."""
        return launch(
            self.demo,
            settings=self.settings,
            viewer=self.viewer,
            share=share,
            directory=self.directory,
        )


def catalog_of(
    snapshot: IndexSnapshot, user: User | None = None
) -> tuple[list[tuple[str, str]], list[str]]:
    """Return the ``(source, title)`` pairs and the tags ``user`` may see (None: all)."""
    docs = {
        s: meta for s, meta in snapshot.docs.items() if user is None or user.may_read(meta.audience)
    }
    sources = sorted((source, meta.title or source) for source, meta in docs.items())
    tags = sorted({tag for meta in docs.values() for tag in meta.tags})
    return sources, tags


class _LastSnapshot:
    """The last snapshot that loaded: the viewer's catalog when the index breaks (D8)."""

    def __init__(self, source: Callable[[], IndexSnapshot]) -> None:
        self._source = source
        self._last: IndexSnapshot | None = None
        self._lock = threading.Lock()

    def readable_roots(self, user: User) -> Mapping[str, str]:
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


def chunk_names(snapshot: Callable[[], IndexSnapshot]) -> Callable[[str], str]:
    """Return a lookup of "Title > Section" by chunk id, rebuilt when the index changes."""
    cache: dict[str, dict[str, str]] = {}

    def name(chunk_id: str) -> str:
        try:
            current = snapshot()
        except AssistantError:
            return ""
        if current.generation not in cache:
            cache.clear()
            cache[current.generation] = {
                chunk.chunk_id: _chunk_name(chunk, current) for chunk in current.chunks
            }
        return cache[current.generation].get(chunk_id, "")

    return name


def _chunk_name(chunk: Chunk, snapshot: IndexSnapshot) -> str:
    meta = snapshot.docs.get(chunk.source)
    title = (meta.title if meta else "") or chunk.source
    section = chunk.heading_path[-1] if len(chunk.heading_path) > 1 else ""
    return f"{title} > {section}" if section else title


def _status(settings: Settings, snapshot: Callable[[], IndexSnapshot], user: User) -> str:
    try:
        status = corpus_status(snapshot(), settings, user)
    except AssistantError:
        status = None
    return header_markdown(status, answer_mode(settings))


def _examples(
    settings: Settings,
    snapshot_of: Callable[[], IndexSnapshot],
    searcher: Searcher,
    directory: Directory,
) -> tuple[str, ...]:
    if directory.has_logins and not settings.ui.examples:
        # Examples are part of every page, the anonymous login page too, and ones
        # drawn from the corpus name its documents (finding D1): only configured ones.
        return ()
    try:
        snapshot: IndexSnapshot | None = snapshot_of()
    except AssistantError:
        snapshot = None
    return pick_examples(settings.ui.examples, snapshot, searcher)


def build_app(
    settings: Settings,
    *,
    doc_roots: Sequence[Path] = DEFAULT_DOC_ROOTS,
    embedder: Embedder | None = None,
) -> WebApp:
    """Build the real chat service and UI over the index in ``settings.store``.

    Args:
        settings: All settings (index location, model, UI host/port/auth).
        doc_roots: Where the viewer looks for documents when the index cannot
            say where a source was ingested from.
        embedder: Overrides the configured embedding model (tests, benchmarks);
            it must be the one the index was built with.

    Returns:
        The app; call ``.launch()``.

    Raises:
        AssistantError: The embedding model or tokenizer cannot be loaded.
    """
    from assistant.answering.service import build_assistant
    from assistant.audit.log import open_audit_log
    from assistant.retrieval.factory import open_retriever
    from assistant.web.changes import ChangeFeed
    from assistant.web.feedback import ChatAudit
    from assistant.web.suggestions import suggester

    directory = load_directory(
        settings.ui.users_file,
        auth_pairs=settings.ui.auth,
        trusted_proxies=settings.ui.trusted_proxies,
    )
    retriever = open_retriever(settings, embedder=embedder)
    service = build_assistant(settings, searcher=retriever, embedder=retriever.embedder)
    try:
        retriever.snapshot()
    except AssistantError as exc:
        logger.warning("starting without an index: %s", exc)
    log = open_audit_log(settings)
    if log is not None:
        logger.info("audit log (%s): %s", settings.audit.mode, log.path)
        atexit.register(log.close, 2.0)  # write what is queued when the server stops
    audit = ChatAudit(log, doc_meta=lambda s: retriever.snapshot().docs.get(s)) if log else None
    changes = ChangeFeed(settings.store.path, days=settings.audit.changes_days)
    last = _LastSnapshot(retriever.snapshot)
    viewer = DocumentViewer(
        roots=doc_roots,
        blocked=[settings.store.path],
        catalog=last.readable_roots,
        default_audience=settings.store.default_audience,
    )
    demo = build_demo(
        service,
        settings=settings,
        catalog=lambda user: catalog_of(retriever.snapshot(), user),
        directory=directory,
        audit=audit,
        changes=changes,
        examples=_examples(settings, retriever.snapshot, retriever, directory),
        status=lambda user: _status(settings, retriever.snapshot, user),
        names=chunk_names(retriever.snapshot),
        suggest=suggester(retriever.snapshot, retriever),
    )
    return WebApp(demo=demo, viewer=viewer, settings=settings, directory=directory)
