"""A scripted `ChatService` for UI tests: real protocol, canned hits and deltas."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from assistant.errors import AssistantError
from assistant.types import (
    Answer,
    Chunk,
    Citation,
    Hit,
    SearchFilters,
    SearchResult,
    Turn,
)

EMERGENCY_BODY = (
    "Emergency Loans carry interest at 12% per annum on a reducing balance. "
    "No processing fee is charged on an Emergency Loan."
)


def make_hit(
    *,
    source: str = "loan-policy.md",
    heading: tuple[str, ...] = ("Loan Policy", "Loan Products", "Emergency Loans", "Interest"),
    anchor: str = "interest",
    body: str = EMERGENCY_BODY,
    title: str = "Loan Policy",
    score: float = 0.87,
    rank: int = 1,
    page: int = 0,
) -> Hit:
    chunk = Chunk(
        chunk_id=f"{source}#{rank}",
        source=source,
        ordinal=rank,
        heading_path=heading,
        anchor=anchor,
        text=" > ".join(heading) + "\n\n" + body,
        body=body,
        prefix="",
        char_start=0,
        char_end=len(body),
        start_line=0,
        end_line=1,
        section_start=0,
        section_end=len(body),
        page=page,
        token_count=len(body.split()),
    )
    return Hit(chunk=chunk, rank=rank, score=score, title=title, effective_date="2026-01-01")


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
    hits: tuple[Hit, ...] = (make_hit(),)
    delay: float = 0.0
    fail_after: int = -1
    no_good_match: bool = False
    raise_on_ask: Exception | None = None
    calls: list[Call] = field(default_factory=list)
    streams: list[FakeStream] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ask(
        self,
        question: str,
        history: Sequence[Turn] = (),
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
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
