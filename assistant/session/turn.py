"""One question answered through any door: ask, stream the deltas, close, finish once.

`start_turn` asks the service (retrieval runs at once, so the sources are known before
the first delta) and returns an `AnswerTurn`; a door iterates it for text deltas and
closes it (a stopped answer closes the upstream stream), then calls `finish`, which
checks the answer, writes its audit record (once, whatever the door) and returns one
frozen `Outcome`: what every door shows or returns, so none reads the stream itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from assistant.answering.service import NOT_COVERED_REASON, shown_text
from assistant.audit.log import AuditLog
from assistant.audit.recording import DocLookup, record_answer
from assistant.protocols import AnswerStream, ChatService
from assistant.session.problem import Problem
from assistant.session.sources import SourceEntry, source_entries
from assistant.types import Answer, Hit, SearchFilters, SearchResult, Turn, User

# The audit log and its document lookup, named here for the doors that hold them.
__all__ = ["AnswerTurn", "AuditLog", "DocLookup", "Outcome", "TurnAudit", "start_turn"]

logger = logging.getLogger(__name__)

MAX_CLOSEST = 5  # the closest sections a refusal lists


@dataclass(frozen=True, slots=True)
class TurnAudit:
    """Where a door records its answers: the log, the document lookup, the door's name.

    The name prefixes the door's own timings (``ask total``, ``api total``), so the log
    tells the doors' records apart.
    """

    log: AuditLog
    door: str
    doc_meta: DocLookup | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """A finished answer as every door needs it, its parts as data.

    ``shown`` is the answer's text (the checked answer, or what streamed if the check
    left nothing, then the model's error note); ``banner`` the label of how it was
    made, never in the text ("" for a model's own answer); ``sources`` every source,
    numbered as the markers; ``closest`` the sections a "not covered" answer lists and
    ``no_match_reason`` why, in words; ``timings`` in milliseconds (the service's and
    the door's own); ``problem`` what cut the answer short (None: nothing);
    ``record_id`` is "" when nothing was recorded.
    """

    question: str
    answer: Answer
    shown: str
    streamed: str
    mode: str
    query: str
    result: SearchResult
    reasoning: str
    trace: tuple[str, ...]
    error: str
    banner: str = ""
    sources: tuple[SourceEntry, ...] = ()
    closest: tuple[Hit, ...] = ()
    no_match_reason: str = ""
    timings: Mapping[str, float] = field(default_factory=dict)
    problem: Problem | None = None
    record_id: str = ""

    @property
    def no_good_match(self) -> bool:
        """Return whether the answer is the "not covered" one."""
        return self.mode == "no good match" or self.result.no_good_match

    @property
    def seen(self) -> str:
        """Return the banner and the text, as a reader of the whole answer sees it."""
        return f"{self.banner}\n\n{self.shown}" if self.banner else self.shown


class AnswerTurn:
    """An answer being produced: iterate for text deltas, `close`, then `finish` once."""

    def __init__(
        self,
        stream: AnswerStream,
        *,
        question: str,
        filters: SearchFilters,
        user: User,
        audit: TurnAudit | None,
        started: float,
    ) -> None:
        self._stream = stream
        self._question = question
        self._filters = filters
        self._user = user
        self._audit = audit
        self._started = started
        self._streamed: list[str] = []
        self._outcome: Outcome | None = None

    @property
    def result(self) -> SearchResult:
        """Return the retrieval outcome (known before the first delta)."""
        return self._stream.result

    @property
    def query(self) -> str:
        """Return the standalone query searched."""
        return self._stream.query

    @property
    def mode(self) -> str:
        """Return how it answers (``extractive``, ``model``, ``no good match``)."""
        return self._stream.mode

    @property
    def banner(self) -> str:
        """Return the label of how it answers, once the first delta has come ("": none)."""
        return self._stream.banner

    @property
    def pending(self) -> tuple[SourceEntry, ...]:
        """Return the sources while the answer streams (none cited yet; none for a refusal)."""
        result = self._stream.result
        if result.no_good_match:
            return ()
        return source_entries(Answer(self._question, "", result.hits, citations=()))

    def unchecked_answer(self) -> Answer:
        """Return what streamed as an answer with no citation (for an answer that failed)."""
        return Answer(self._question, "".join(self._streamed), self.result.hits, citations=())

    def __iter__(self) -> Iterator[str]:
        for delta in self._stream:
            self._streamed.append(delta)
            yield delta

    def close(self) -> None:
        """Stop generating and release the upstream connection."""
        self._stream.close()

    def finish(self, *, timings_ms: Mapping[str, float] | None = None) -> Outcome:
        """Check the answer, record it (once) and return the outcome.

        ``timings_ms`` are the door's own timings, named without its prefix (``total``).

        Raises:
            AssistantError: The answer could not be checked (the stream failed).
        """
        if self._outcome is not None:
            return self._outcome
        stream = self._stream
        answer = stream.answer()
        streamed = "".join(self._streamed)
        shown = shown_text(answer, streamed=streamed, error=stream.error)
        timings = dict(timings_ms or {"total": (time.perf_counter() - self._started) * 1000})
        banner = stream.banner
        record_id = ""
        if self._audit is not None:
            record_id = record_answer(
                self._audit.log,
                stream,
                answer,
                f"{banner}\n\n{shown}" if banner else shown,
                question=self._question,
                user=self._user,
                filters=self._filters,
                timings_ms={f"{self._audit.door} {k}": ms for k, ms in timings.items()},
                doc_meta=self._audit.doc_meta,
            )
        door = self._audit.door if self._audit else "door"
        refused = stream.result.no_good_match or stream.mode == "no good match"
        refused = refused or answer.not_covered
        model_said = NOT_COVERED_REASON if answer.not_covered else ""
        reason = stream.result.no_match_reason or model_said
        self._outcome = Outcome(
            question=self._question,
            answer=answer,
            shown=shown,
            streamed=streamed,
            mode=stream.mode,
            query=stream.query,
            result=stream.result,
            reasoning=stream.reasoning,
            trace=stream.trace(),
            error=stream.error,
            banner=banner,
            sources=source_entries(answer),
            closest=tuple(answer.sources[:MAX_CLOSEST]) if refused else (),
            no_match_reason=reason if refused else "",
            timings={**stream.timings_ms, **{f"{door} {k}": ms for k, ms in timings.items()}},
            problem=Problem("failed", detail=stream.error) if stream.error else None,
            record_id=record_id,
        )
        return self._outcome

    def run(self) -> Outcome:
        """Stream the answer to its end, close, and finish (``ask`` and the API's whole reply)."""
        try:
            for _ in self:
                pass
        finally:
            self.close()
        return self.finish()


def start_turn(
    service: ChatService,
    question: str,
    history: Sequence[Turn] = (),
    *,
    k: int | None,
    filters: SearchFilters,
    user: User,
    audit: TurnAudit | None = None,
) -> AnswerTurn:
    """Ask ``service`` and return the turn (retrieval has run).

    Raises:
        AssistantError: Retrieval failed (for example, no index yet).
    """
    started = time.perf_counter()
    stream = service.ask(question, history, k=k, filters=filters, user=user)
    return AnswerTurn(
        stream, question=question, filters=filters, user=user, audit=audit, started=started
    )
