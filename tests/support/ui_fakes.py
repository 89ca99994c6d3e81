"""A scripted `ChatService` for UI tests: real protocol, canned hits and deltas."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from assistant.errors import AssistantError
from assistant.types import (
    ANONYMOUS,
    Answer,
    Citation,
    Hit,
    SearchFilters,
    SearchResult,
    Turn,
    User,
)
from tests.support.hit_factory import make_hit

EMERGENCY_BODY = (
    "Emergency Loans carry interest at 12% per annum on a reducing balance. "
    "No processing fee is charged on an Emergency Loan."
)


LOAN_HEADING = ("Loan Policy", "Loan Products", "Emergency Loans", "Interest")


def loan_hit(
    *,
    rank: int = 1,
    body: str = EMERGENCY_BODY,
    heading_path: tuple[str, ...] = LOAN_HEADING,
    anchor: str = "interest",
    **fields: Any,
) -> Hit:
    """Return `make_hit` with the emergency-loan section the UI tests show by default."""
    defaults: dict[str, Any] = {
        "source": "loan-policy.md",
        "title": "Loan Policy",
        "score": 0.87,
        "effective_date": "2026-01-01",
        "section_text": "",
    }
    return make_hit(rank, body, heading_path=heading_path, anchor=anchor, **{**defaults, **fields})


@dataclass
class Call:
    question: str
    history: tuple[Turn, ...]
    k: int | None
    filters: SearchFilters | None


@dataclass
class FakeStream:
    question: str
    hits: tuple[Hit, ...]
    deltas: tuple[str, ...]
    delay: float = 0.0
    fail_after: int = -1
    no_good_match: bool = False
    closed: threading.Event = field(default_factory=threading.Event)
    error: str = ""
    query: str = ""
    mode: str = ""
    reasoning: str = ""
    banner: str = ""
    timings_ms: dict[str, float] = field(default_factory=lambda: {"retrieval": 4.0})
    _text: str = ""
    result: SearchResult = field(init=False)

    def __post_init__(self) -> None:
        self.result = SearchResult(
            query=self.query, hits=self.hits, no_good_match=self.no_good_match, trace=()
        )

    def __iter__(self) -> Iterator[str]:
        for number, delta in enumerate(self.deltas):
            if self.closed.is_set():
                return
            if number == self.fail_after:
                raise AssistantError("the model went away")
            if self.delay:
                self.closed.wait(self.delay)
            self._text += delta
            yield delta

    def close(self) -> None:
        self.closed.set()

    def answer(self) -> Answer:
        cited = tuple(
            Citation(number=n, hit=self.hits[n - 1])
            for n in range(1, len(self.hits) + 1)
            if f"[{n}]" in self._text
        )
        return Answer(question=self.question, text=self._text, sources=self.hits, citations=cited)

    def trace(self) -> tuple[str, ...]:
        return ("candidates: 1", "prompt tokens: 321", "search: 4 ms")


@dataclass
class FakeService:
    """Answers every question with the same hits and deltas; records each call."""

    deltas: tuple[str, ...] = ("Emergency loans ", "cost 12% a year", " [1].")
    hits: tuple[Hit, ...] = (loan_hit(),)
    delay: float = 0.0
    fail_after: int = -1
    no_good_match: bool = False
    raise_on_ask: Exception | None = None
    banner: str = ""
    calls: list[Call] = field(default_factory=list)
    streams: list[FakeStream] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self, **fields: Any) -> None:
        """Forget the calls and streams and go back to the defaults (then ``fields``).

        For a service shared by the tests of a module behind one served app.
        """
        fresh = FakeService(**fields)
        with self._lock:
            names = ("deltas", "hits", "delay", "fail_after", "no_good_match", "raise_on_ask")
            for name in (*names, "banner"):
                setattr(self, name, getattr(fresh, name))
            self.calls.clear()
            self.streams.clear()

    def ask(
        self,
        question: str,
        history: Sequence[Turn] = (),
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        user: User = ANONYMOUS,
    ) -> FakeStream:
        with self._lock:
            self.calls.append(Call(question, tuple(history), k, filters))
        if self.raise_on_ask is not None:
            raise self.raise_on_ask
        stream = FakeStream(
            question=question,
            hits=self.hits,
            deltas=self.deltas,
            delay=self.delay,
            fail_after=self.fail_after,
            no_good_match=self.no_good_match,
            query=f"standalone: {question}",
            banner=self.banner,
        )
        with self._lock:
            self.streams.append(stream)
        return stream


def wait_for(predicate: object, *, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return True
        time.sleep(0.02)
    return False
