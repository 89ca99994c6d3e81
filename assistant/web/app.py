"""Wire the real parts into the web UI: index reader, retriever, assistant, viewer.

`build_app` is what `assistant.cli.serve` (``ui.py``) calls. It opens nothing per user: one
`IndexReader` (which reloads after a later ingest), one `Retriever` and one
assistant serve every session. A missing index is not fatal here; the chat
tells the user to run ``python ingest.py`` and the viewer falls back to the
configured document roots.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from assistant.config import Settings
from assistant.errors import AssistantError
from assistant.protocols import Embedder, Searcher
from assistant.types import Chunk, IndexSnapshot
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

    def launch(self, *, share: bool = False) -> str:
        """Start serving in the background and return the local URL."""
        return launch(self.demo, settings=self.settings, viewer=self.viewer, share=share)


def catalog_of(snapshot: IndexSnapshot) -> tuple[list[tuple[str, str]], list[str]]:
    """Return the ``(source, title)`` pairs and the tags for the filters panel."""
    sources = sorted((source, meta.title or source) for source, meta in snapshot.docs.items())
    tags = sorted({tag for meta in snapshot.docs.values() for tag in meta.tags})
    return sources, tags


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


def _status(settings: Settings, snapshot: Callable[[], IndexSnapshot]) -> str:
    try:
        status = corpus_status(snapshot(), settings)
    except AssistantError:
        status = None
    return header_markdown(status, answer_mode(settings))


def _examples(
    settings: Settings, snapshot_of: Callable[[], IndexSnapshot], searcher: Searcher
) -> tuple[str, ...]:
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
    from assistant.retrieval.factory import open_retriever

    retriever = open_retriever(settings, embedder=embedder)
    service = build_assistant(settings, searcher=retriever, embedder=retriever.embedder)
    sources: list[tuple[str, str]] = []
    tags: list[str] = []
    try:
        sources, tags = catalog_of(retriever.snapshot())
    except AssistantError as exc:
        logger.warning("starting without an index: %s", exc)

    def indexed_roots() -> Mapping[str, str]:
        return retriever.snapshot().roots

    viewer = DocumentViewer(roots=doc_roots, blocked=[settings.store.path], catalog=indexed_roots)
    demo = build_demo(
        service,
        settings=settings,
        sources=sources,
        tags=tags,
        examples=_examples(settings, retriever.snapshot, retriever),
        catalog=lambda: catalog_of(retriever.snapshot()),
        status=lambda: _status(settings, retriever.snapshot),
        names=chunk_names(retriever.snapshot),
    )
    return WebApp(demo=demo, viewer=viewer, settings=settings)
