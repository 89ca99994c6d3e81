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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from assistant.config import Settings
from assistant.errors import AssistantError
from assistant.protocols import Embedder, Searcher
from assistant.session import LastSnapshot, open_desk
from assistant.types import Chunk, IndexSnapshot, User
from assistant.users import Directory, load_directory
from assistant.web.examples import pick_examples
from assistant.web.header import answer_mode, corpus_status, header_markdown
from assistant.web.ui import build_demo, launch
from assistant.web.viewer import DocumentViewer

if TYPE_CHECKING:
    import gradio as gr

__all__ = ["DEFAULT_DOC_ROOTS", "WebApp", "build_app"]

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
    from assistant.web.changes import ChangeFeed
    from assistant.web.feedback import ChatAudit
    from assistant.web.suggestions import suggester

    directory = load_directory(
        settings.ui.users_file,
        auth_pairs=settings.ui.auth,
        trusted_proxies=settings.ui.trusted_proxies,
    )
    desk = open_desk(settings, embedder=embedder)
    snapshot, searcher = desk.snapshot, desk.searcher
    # Opened over the configured index, the desk has both.
    assert snapshot is not None
    assert searcher is not None
    try:
        snapshot()
    except AssistantError as exc:
        logger.warning("starting without an index: %s", exc)
    if desk.log is not None:
        atexit.register(desk.close, 2.0)  # write what is queued when the server stops
    audit = ChatAudit(desk.log) if desk.log else None
    changes = ChangeFeed(settings.store.path, days=settings.audit.changes_days)
    last = LastSnapshot(snapshot)
    viewer = DocumentViewer(
        roots=doc_roots,
        blocked=[settings.store.path],
        catalog=last.readable_roots,
        default_audience=settings.store.default_audience,
    )
    demo = build_demo(
        desk,
        directory=directory,
        audit=audit,
        changes=changes,
        examples=_examples(settings, snapshot, searcher, directory),
        status=lambda user: _status(settings, snapshot, user),
        names=chunk_names(snapshot),
        suggest=suggester(snapshot, searcher),
    )
    return WebApp(demo=demo, viewer=viewer, settings=settings, directory=directory)
