"""One question answered through any door: ask, stream the events, close, finish once.

`start_turn` asks the service (retrieval runs at once, so the sources are known before
the first delta) and returns an `AnswerTurn`; a door iterates it for events (`Delta`
text, then `Finished` with the `Outcome`, or `Failed` with the `Problem` and the
partial text) and closes it (a stopped answer closes the upstream stream). Finishing
checks the answer, writes its audit record (once, whatever the door) and returns one
frozen `Outcome`: what every door shows or returns, so none reads the stream itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from assistant.answering.service import NOT_COVERED_REASON, shown_text
from assistant.audit.log import AuditLog, utc_now
from assistant.audit.recording import DocLookup, record_answer
from assistant.errors import AssistantError
from assistant.protocols import AnswerStream, ChatService
from assistant.session.problem import Problem, problem_of
from assistant.session.sources import SourceEntry, source_entries
from assistant.types import Answer, Hit, SearchFilters, SearchResult, Turn, User

# The audit log and its document lookup, named here for the doors that hold them.
__all__ = [
    "AnswerTurn",
    "AuditLog",
    "Delta",
    "DocLookup",
    "Event",
    "Failed",
    "Finished",
    "Outcome",
    "TurnAudit",
    "start_turn",
    "utc_now",
]

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
    door: str = ""

    @property
    def no_good_match(self) -> bool:
        """Return whether the answer is the "not covered" one."""
        return self.mode == "no good match" or self.result.no_good_match

    def door_timings(self) -> dict[str, float]:
        """Return the door's own timings in milliseconds, without its prefix (``total``)."""
        prefix = f"{self.door} "
        return {k[len(prefix) :]: ms for k, ms in self.timings.items() if k.startswith(prefix)}

    @property
    def seen(self) -> str:
        """Return the banner and the text, as a reader of the whole answer sees it."""
        return f"{self.banner}\n\n{self.shown}" if self.banner else self.shown


@dataclass(frozen=True, slots=True)
class Delta:
    """More of the answer's text (neutralised: shown as it is)."""

    text: str


@dataclass(frozen=True, slots=True)
class Finished:
    """The answer ended and was checked and recorded: the last event."""

    outcome: Outcome


@dataclass(frozen=True, slots=True)
class Failed:
    """The answer broke off: why, and the text that had streamed (kept, not recorded)."""

    problem: Problem
    partial: str


Event = Delta | Finished | Failed


class AnswerTurn:
    """An answer being produced: iterate for its events (or `run` it), then `close`."""

    def __init__(
        self,
        stream: AnswerStream,
        *,
        question: str,
        filters: SearchFilters,
        user: User,
        audit: TurnAudit | None,
        started: float,
        door: str = "",
    ) -> None:
        self._door = audit.door if audit else door or "door"
        self._stream = stream
        self._question = question
        self._filters = filters
        self._user = user
        self._audit = audit
        self._started = started
        self._streamed: list[str] = []
        self._outcome: Outcome | None = None
        self._first_ms = 0.0
        self._failure: AssistantError | None = None

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

    def __iter__(self) -> Iterator[Event]:
        try:
            for delta in self._stream:
                # The first token counts from the question, search included.
                self._first_ms = self._first_ms or _ms_since(self._started)
                self._streamed.append(delta)
                yield Delta(delta)
            outcome = self.finish()
        except AssistantError as exc:  # the stream or its check failed: nothing is recorded
            self._failure = exc
            yield Failed(problem_of(exc), "".join(self._streamed))
            return
        yield Finished(outcome)

    def close(self) -> None:
        """Stop generating and release the upstream connection."""
        self._stream.close()

    def finish(self) -> Outcome:
        """Check the answer, record it (once) and return the outcome.

        The door's own timings (``first token``, ``total``, from the question on) are
        recorded under its name (``ui total``).

        Raises:
            AssistantError: The answer could not be checked (the stream failed).
        """
        if self._outcome is not None:
            return self._outcome
        stream = self._stream
        answer = stream.answer()
        streamed = "".join(self._streamed)
        shown = shown_text(answer, streamed=streamed, error=stream.error)
        timings = {"total": _ms_since(self._started)}
        if self._first_ms:
            timings["first token"] = self._first_ms
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
        door = self._door
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
            door=door,
        )
        return self._outcome

    def run(self) -> Outcome:
        """Stream the answer to its end, close, and finish (``ask`` and the API's whole reply).

        Raises:
            AssistantError: The answer broke off.
        """
        try:
            for event in self:
                if isinstance(event, Finished):
                    return event.outcome
        finally:
            self.close()
        raise self._failure or AssistantError("the answer ended without an outcome")


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def start_turn(
    service: ChatService,
    question: str,
    history: Sequence[Turn] = (),
    *,
    k: int | None,
    filters: SearchFilters,
    user: User,
    audit: TurnAudit | None = None,
    door: str = "",
) -> AnswerTurn:
    """Ask ``service`` and return the turn (retrieval has run).

    Raises:
        AssistantError: Retrieval failed (for example, no index yet).
    """
    started = time.perf_counter()
    stream = service.ask(question, history, k=k, filters=filters, user=user)
    return AnswerTurn(
        stream,
        question=question,
        filters=filters,
        user=user,
        audit=audit,
        started=started,
        door=door,
    )
