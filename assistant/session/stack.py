"""The one composition root: the parts every door answers with, built once per process.

`open_stack` opens the retriever (and its index reader), the assistant over it and the
audit log; the doors (chat, API, ``ask``) hold the `Stack` and never call the factories
themselves. `shared_embedder` is the per-process embedder cache the commands share (the
model loads once, whichever command asks first). `searching_as` binds a searcher to
one user.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from assistant.answering.service import Assistant, build_assistant
from assistant.audit.log import AuditLog, open_audit_log
from assistant.audit.recording import DocLookup
from assistant.config import Settings
from assistant.embeddings.factory import make_embedder
from assistant.protocols import Embedder, Searcher
from assistant.retrieval.factory import open_retriever
from assistant.retrieval.retriever import Retriever
from assistant.session.filters import Catalogue
from assistant.session.visibility import catalog_of
from assistant.types import ANONYMOUS, DocMeta, IndexSnapshot, SearchFilters, SearchResult, User

__all__ = [
    "Stack",
    "catalogue_of",
    "embedder_of",
    "open_assistant",
    "open_log",
    "open_searcher",
    "open_stack",
    "searching_as",
    "shared_embedder",
    "snapshot_lookup",
    "user_of",
]

logger = logging.getLogger(__name__)


def shared_embedder(settings: Settings) -> Embedder:
    """Return the configured embedder; one per configuration and process, shared by all."""
    return make_embedder(settings.embedding)  # the factory keeps one per configuration


def open_searcher(settings: Settings, *, embedder: Embedder | None = None) -> Retriever:
    """Return a `Retriever` over ``settings.store`` (the shared embedder unless one is given).

    Raises:
        AssistantError: The embedding model or tokenizer cannot be loaded.
    """
    return open_retriever(settings, embedder=embedder or shared_embedder(settings))


def open_assistant(
    settings: Settings, *, searcher: Searcher, embedder: Embedder | None = None
) -> Assistant:
    """Return the assistant over ``searcher``; offline it ranks passages with ``embedder``.

    Without one it ranks with the embedder of the index behind ``searcher``.
    """
    ranker = embedder or embedder_of(searcher)
    return build_assistant(settings, searcher=searcher, embedder=ranker)


def open_log(settings: Settings) -> AuditLog | None:
    """Return the configured audit log, started, or None when auditing is off."""
    log = open_audit_log(settings)
    if log is not None:
        logger.info("audit log (%s): %s", settings.audit.mode, log.path)
    return log


class _BoundSearcher:
    """A `Searcher` that always searches as one user, whoever the caller names."""

    def __init__(self, wrapped: Searcher, user: User) -> None:
        self.wrapped = wrapped
        self.user = user

    def search(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        user: User = ANONYMOUS,
    ) -> SearchResult:
        """Search as the bound user (``user`` is ignored: the binding chose)."""
        del user
        return self.wrapped.search(question, k=k, filters=filters, user=self.user)


def _unbound(searcher: Searcher) -> Searcher:
    return searcher.wrapped if isinstance(searcher, _BoundSearcher) else searcher


def embedder_of(searcher: Searcher) -> Embedder | None:
    """Return the embedding model behind a `Retriever` (bound or not), else None."""
    inner = _unbound(searcher)
    return inner.embedder if isinstance(inner, Retriever) else None


def snapshot_lookup(searcher: Searcher) -> DocLookup | None:
    """Return the index's document lookup behind a `Retriever` (bound or not), else None."""
    inner = _unbound(searcher)
    return _lookup(inner) if isinstance(inner, Retriever) else None


def searching_as(searcher: Searcher, user: User) -> Searcher:
    """Return a searcher that always searches as ``user``, whoever the caller names."""
    return _BoundSearcher(_unbound(searcher), user)


def user_of(searcher: Searcher, default: User) -> User:
    """Return the user a searcher from `searching_as` searches as, else ``default``."""
    return searcher.user if isinstance(searcher, _BoundSearcher) else default


def catalogue_of(searcher: Searcher) -> Callable[[User], Catalogue] | None:
    """Return the catalogue a user may see behind a `Retriever` (bound or not), else None.

    None when the searcher cannot list its index (a test fake): filters go as given.
    """
    inner = _unbound(searcher)
    if not isinstance(inner, Retriever):
        return None
    return lambda user: catalog_of(inner.snapshot(), user)


def _lookup(retriever: Retriever) -> DocLookup:
    def lookup(source: str) -> DocMeta | None:
        return retriever.snapshot().docs.get(source)

    return lookup


@dataclass(frozen=True, slots=True)
class Stack:
    """What a door answers with: the retriever, the assistant over it and the audit log."""

    settings: Settings
    retriever: Retriever
    assistant: Assistant
    log: AuditLog | None

    def snapshot(self) -> IndexSnapshot:
        """Return the current index snapshot.

        Raises:
            AssistantError: There is no index, or it cannot be read.
        """
        return self.retriever.snapshot()

    def doc_meta(self, source: str) -> DocMeta | None:
        """Return the current metadata of ``source`` (its version for the audit record)."""
        return self.retriever.snapshot().docs.get(source)

    def searcher_for(self, user: User) -> Searcher:
        """Return a searcher that always searches as ``user``."""
        return _BoundSearcher(self.retriever, user)


def open_stack(
    settings: Settings, *, embedder: Embedder | None = None, audit: bool = True
) -> Stack:
    """Open the retriever, the assistant and (unless ``audit`` is false) the audit log.

    Args:
        settings: All settings.
        embedder: Overrides the configured embedding model (tests, benchmarks); it must
            be the one the index was built with.
        audit: Open the audit log as configured; false for runs that record nothing.

    Raises:
        AssistantError: The embedding model or tokenizer cannot be loaded.
    """
    retriever = open_searcher(settings, embedder=embedder)
    return Stack(
        settings=settings,
        retriever=retriever,
        assistant=open_assistant(settings, searcher=retriever),
        log=open_log(settings) if audit else None,
    )
