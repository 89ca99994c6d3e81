"""The funnel every door asks through: one `Desk` per process, one `Request` or `Problem`.

`open_desk` wires the parts once (`stack`); `Desk.request` reads what a door received
(the question, its conversation, ``k``, the filters, the user) into a `Request`, or the
`Problem` that keeps it from being asked: the same rules for the chat, the API and
``ask``. `Desk.ask` runs retrieval and returns the `AnswerTurn` (or the `Problem` of a
missing index, a store that is down, a failure), recording its answer under the
door's name.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from assistant.config import Settings
from assistant.errors import AssistantError
from assistant.protocols import ChatService, Embedder, Searcher
from assistant.session.filters import Catalogue, resolve_filters
from assistant.session.problem import Problem, problem_of
from assistant.session.request import check_question, history_to_turns
from assistant.session.stack import (
    catalogue_of,
    open_assistant,
    open_log,
    open_stack,
    snapshot_lookup,
)
from assistant.session.turn import AnswerTurn, TurnAudit, start_turn
from assistant.session.visibility import catalog_of
from assistant.types import ANONYMOUS, MAX_K, MAX_TURNS, IndexSnapshot, SearchFilters, Turn, User

if TYPE_CHECKING:
    from assistant.audit.log import AuditLog
    from assistant.audit.recording import DocLookup

__all__ = ["MAX_K", "Desk", "Request", "filters_for", "open_desk"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Request:
    """A question that may be asked: checked text, newest turns, ``k``, resolved filters."""

    question: str
    history: tuple[Turn, ...]
    k: int
    filters: SearchFilters
    user: User = ANONYMOUS


@dataclass(frozen=True, slots=True)
class Desk:
    """What a door answers with: the service, the catalogue, the audit log, the settings.

    ``catalogue`` returns the ``(source, title)`` pairs and tags a user may see (None:
    filters are taken as given); ``snapshot`` the current index snapshot and
    ``searcher`` the shared searcher (the chat's examples and follow-ups).
    """

    service: ChatService
    settings: Settings = field(default_factory=Settings)
    catalogue: Callable[[User], Catalogue] | None = None
    log: AuditLog | None = None
    doc_meta: DocLookup | None = None
    snapshot: Callable[[], IndexSnapshot] | None = None
    searcher: Searcher | None = None
    embedder: Embedder | None = None

    def with_catalogue(self, catalogue: Callable[[User], Catalogue]) -> Desk:
        """Return this desk checking filters against ``catalogue``, unless it has one."""
        return self if self.catalogue is not None else replace(self, catalogue=catalogue)

    def visible(self, user: User) -> Catalogue | None:
        """Return what ``user`` may filter on, or None when it cannot be told now."""
        if self.catalogue is None:
            return None
        try:
            return self.catalogue(user)
        except AssistantError as exc:  # no index yet: asking says so
            logger.debug("no catalogue: %s", exc)
            return None

    def request(
        self,
        text: object,
        *,
        history: object = (),
        k: object = None,
        sources: Sequence[object] = (),
        tags: Sequence[object] = (),
        user: User = ANONYMOUS,
    ) -> Request | Problem:
        """Return the `Request` a door received, or the `Problem` that keeps it from being asked.

        ``history`` is `Turn` objects or messages as a client sent them (untrusted).
        """
        checked = check_question(text)
        if checked.problem:
            return Problem(checked.problem, length=checked.length)
        top_k = self._k(k)
        if isinstance(top_k, Problem):
            return top_k
        filters = _as_filters(sources, tags)
        if not isinstance(filters, Problem):
            filters = self.resolve(filters, user)
        if isinstance(filters, Problem):
            return filters
        return Request(checked.text, _turns(history), top_k, filters, user)

    def resolve(self, filters: SearchFilters, user: User) -> SearchFilters | Problem:
        """Return ``filters`` as the index names them, or the unknown value as a `Problem`."""
        if not (filters.sources or filters.tags):
            return filters
        catalogue = self.visible(user)
        return filters if catalogue is None else resolve_filters(filters, catalogue)

    def _k(self, k: object) -> int | Problem:
        if k is None:
            return self.settings.retrieval.top_k
        # A slider sends 3.0; True is not a number of sources.
        if isinstance(k, float) and k.is_integer():
            k = int(k)
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
            return Problem("bad k", field="k", value=str(k)[:20])
        return k

    def ask(self, request: Request, *, door: str) -> AnswerTurn | Problem:
        """Start answering ``request`` (retrieval runs now); record its answer as ``door``."""
        audit = TurnAudit(self.log, door=door, doc_meta=self.doc_meta) if self.log else None
        try:
            return start_turn(
                self.service,
                request.question,
                request.history,
                k=request.k,
                filters=request.filters,
                user=request.user,
                audit=audit,
                door=door,
            )
        except AssistantError as exc:
            return problem_of(exc)

    def close(self, timeout: float) -> None:
        """Write what the audit log holds, waiting at most ``timeout`` seconds."""
        if self.log is not None:
            self.log.close(timeout)


def _as_filters(sources: Sequence[object], tags: Sequence[object]) -> SearchFilters | Problem:
    for name, values in (("source", sources), ("tag", tags)):
        for value in values:
            if not isinstance(value, str):  # an API client's number or list
                return Problem("unknown filter", field=name, value=str(value)[:100])
    return SearchFilters(sources=tuple(str(v) for v in sources), tags=tuple(str(v) for v in tags))


def _turns(history: object) -> tuple[Turn, ...]:
    if isinstance(history, tuple | list) and all(isinstance(t, Turn) for t in history):
        return tuple(history)[-MAX_TURNS:]
    return history_to_turns(history)


def filters_for(searcher: Searcher, filters: SearchFilters, user: User) -> SearchFilters | Problem:
    """Return ``filters`` resolved as a desk over ``searcher`` resolves them (``search``)."""
    catalogue = catalogue_of(searcher)
    if catalogue is None or not (filters.sources or filters.tags):
        return filters
    try:
        visible = catalogue(user)
    except AssistantError as exc:  # no index yet: the search says so
        logger.debug("no catalogue: %s", exc)
        return filters
    return resolve_filters(filters, visible)


def open_desk(
    settings: Settings,
    *,
    searcher: Searcher | None = None,
    embedder: Embedder | None = None,
    audit: bool = True,
) -> Desk:
    """Open the parts once per process: the searcher, the assistant, the audit log.

    Args:
        settings: All settings.
        searcher: Answer over this searcher (the command line's, a test's) instead of
            opening the configured index.
        embedder: Overrides the configured embedding model (tests, benchmarks); it must
            be the one the index was built with.
        audit: Open the audit log as configured; false for runs that record nothing.

    Raises:
        AssistantError: The embedding model or tokenizer cannot be loaded.
    """
    if searcher is None:
        opened = open_stack(settings, embedder=embedder, audit=audit)
        retriever = opened.retriever
        return Desk(
            opened.assistant,
            settings=settings,
            catalogue=lambda user: catalog_of(retriever.snapshot(), user),
            log=opened.log,
            doc_meta=opened.doc_meta,
            snapshot=retriever.snapshot,
            searcher=retriever,
            embedder=retriever.embedder,
        )
    catalogue = catalogue_of(searcher)
    return Desk(
        open_assistant(settings, searcher=searcher, embedder=embedder),
        settings=settings,
        catalogue=catalogue,
        log=open_log(settings) if audit else None,
        doc_meta=snapshot_lookup(searcher),
        searcher=searcher,
    )
