"""``python -m assistant ask``: the chat's answer, from a shell or a script.

``ask "question"`` prints the answer as the chat shows it, then a short numbered
list of the sources it cites. ``ask --json`` reads ``{"id", "question"}`` lines
on stdin and writes one JSON line per line read (flushed at once; the embedder
and the chat model load once per process, and a later ingest is picked up
between questions):

``{"id", "answer", "mode", "no_good_match", "citations": [{"n", "chunk_id",
"source", "heading_path", "page"}], "unsupported": [...], "sources": [{"n",
"chunk_id", "source", "heading_path", "page", "score"}]}``

``answer`` is the text the chat shows (`shown_text`, citation markers
included) as plain text, without the neutraliser's backslash escapes; ``mode``
is ``extractive``, ``model`` or ``no good match`` (and ``no_good_match`` is true
exactly for the last); ``unsupported`` lists the sentences the citation check
flagged; ``sources`` are the numbered sources, so ``[n]`` in the answer is the
source with that ``n``. A line that cannot be answered gets ``{"id", "error"}``
and the next line is read. The settings are the chat's (``ASSISTANT_*``,
including ``ASSISTANT_LLM_*`` for a model).

Every answer is recorded in the audit log as the chat's are (user: ``--as USER``
or ``local``, the operator; timings ``ask total``), unless ``--no-audit`` (for
evaluation runs) or ``ASSISTANT_AUDIT=off``. The log is written in the background
and flushed for at most `AUDIT_FLUSH_S` before the command exits; a database
that cannot be written costs a logged warning, never an answer.
"""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import dataclass
from typing import TextIO

from assistant.cli._common import EXIT_OK, json_text
from assistant.cli._filters import problem_error
from assistant.cli.access import LOCAL_OPERATOR
from assistant.config import Settings
from assistant.errors import AssistantError, ConfigError
from assistant.protocols import Searcher
from assistant.session import (
    Desk,
    Outcome,
    Problem,
    open_desk,
    renumbered,
    shown_entries,
    unescape_markdown,
    user_of,
)
from assistant.types import HEADING_SEPARATOR, Hit, SearchFilters, User

__all__ = ["answer_to_json", "ask_with", "format_answer", "run_ask"]

logger = logging.getLogger(__name__)

# Long enough for a healthy disk, short enough that a locked database only
# delays the exit a little (its busy timeout is 5 s a write).
AUDIT_FLUSH_S = 6.0


@dataclass(frozen=True, slots=True)
class _Asking:
    """What each answer of one ``ask`` run needs besides its question."""

    desk: Desk
    k: int | None
    filters: SearchFilters
    user: User

    def ask(self, question: str) -> Outcome:
        """Answer ``question`` and queue its audit record (never raising for the audit).

        Raises:
            AssistantError: The desk refused the question or could not answer it.
        """
        asked = self.desk.request(
            question,
            k=self.k,
            sources=self.filters.sources,
            tags=self.filters.tags,
            user=self.user,
        )
        turn = asked if isinstance(asked, Problem) else self.desk.ask(asked, door="ask")
        if isinstance(turn, Problem):
            raise problem_error(turn)
        return turn.run()


def run_ask(
    args: argparse.Namespace,
    settings: Settings,
    *,
    stdin: TextIO,
    out: TextIO,
    searcher: Searcher,
) -> int:
    """Answer ``args.question``, or every JSON line of ``stdin`` with ``--json``.

    The filters and ``k`` are checked once, before any question (a usage error).

    Raises:
        ConfigError: No question and no ``--json``, a blank question, ``k`` or a filter
            value the index does not hold.
        AssistantError: Answering the one question given failed (for example, no index).
    """
    if not args.json and args.question is None:
        raise ConfigError("give a question, or --json to read questions from stdin")
    desk = open_desk(settings, searcher=searcher, audit=not getattr(args, "no_audit", False))
    try:
        return ask_with(desk, args, stdin=stdin, out=out, user=user_of(searcher, LOCAL_OPERATOR))
    finally:
        desk.close(AUDIT_FLUSH_S)


def ask_with(
    desk: Desk, args: argparse.Namespace, *, stdin: TextIO, out: TextIO, user: User
) -> int:
    """Answer as `run_ask` does, through ``desk`` (the door's whole work: tests run it).

    Raises:
        ConfigError: A blank question, ``k`` or a filter value the index does not hold.
        AssistantError: Answering the one question given failed (for example, no index).
    """
    asking = _checked(args, desk, user)
    if not args.json:
        outcome = asking.ask(args.question)
        print(format_answer(outcome), file=out)
        return EXIT_OK
    if args.question is not None:
        _write(out, _answer_line(asking, None, args.question))
        return EXIT_OK
    for line in stdin:
        if line.strip():
            _write(out, _request_line(asking, line))
    return EXIT_OK


def _checked(args: argparse.Namespace, desk: Desk, user: User) -> _Asking:
    """Return the run's asking, its ``k`` and filters checked as any question's are."""
    k = getattr(args, "k", None)
    probe = args.question if args.question is not None else "?"
    asked = desk.request(probe, k=k, sources=args.source, tags=args.tag, user=user)
    if isinstance(asked, Problem):
        raise problem_error(asked)
    return _Asking(desk, k=asked.k, filters=asked.filters, user=user)


def _request_line(asking: _Asking, line: str) -> dict[str, object]:
    try:
        request = json.loads(line)
    except ValueError as exc:
        return {"id": None, "error": f"bad request line: {exc}"}
    if not isinstance(request, dict):
        return {"id": None, "error": "bad request line: not a JSON object"}
    question_id, question = request.get("id"), request.get("question")
    if not isinstance(question, str) or not question.strip():
        return {
            "id": question_id,
            "error": "bad request line: 'question' must be a non-empty string",
        }
    return _answer_line(asking, question_id, question)


def _answer_line(asking: _Asking, question_id: object, question: str) -> dict[str, object]:
    try:
        outcome = asking.ask(question)
    except AssistantError as exc:
        logger.warning("question %r failed: %s", question_id, exc)
        return {"id": question_id, "error": str(exc)}
    return {"id": question_id, **answer_to_json(outcome)}


def _write(out: TextIO, record: dict[str, object]) -> None:
    out.write(json_text(record) + "\n")
    out.flush()


def answer_to_json(outcome: Outcome) -> dict[str, object]:
    """Return the contract shape of one finished answer (without ``id``)."""
    answer = outcome.answer
    return {
        "answer": unescape_markdown(outcome.seen),
        "mode": outcome.mode,
        "no_good_match": outcome.mode == "no good match",
        "citations": [{"n": c.number, **_where(c.hit)} for c in answer.citations],
        "unsupported": list(answer.unsupported_sentences),
        "sources": [
            {"n": n, **_where(hit), "score": round(hit.score, 4)}
            for n, hit in enumerate(answer.sources, start=1)
        ],
    }


def _where(hit: Hit) -> dict[str, object]:
    # The same conventions as `search --json` (`result_to_json`).
    return {
        "chunk_id": hit.chunk.chunk_id,
        "source": hit.chunk.source,
        "heading_path": HEADING_SEPARATOR.join(hit.chunk.heading_path),
        "page": hit.chunk.page or None,
    }


def format_answer(outcome: Outcome) -> str:
    """Return the answer text, then its numbered sources and any statements to check.

    Sources are numbered 1..n in the order the answer first cites them, as the chat
    shows them; when none is cited (no good match, or an answer without markers) every
    source is listed, as the chat does.
    """
    answer = outcome.answer
    entries = outcome.sources
    shown_sources = shown_entries(entries)
    numbers = {entry.number: entry.shown for entry in entries}
    lines = [unescape_markdown(renumbered(outcome.seen, numbers))]
    if shown_sources:
        title = "Closest sections:" if outcome.mode == "no good match" else "Sources:"
        lines += ["", title]
        lines += [f"[{e.shown}] {_source_line(e.hit)}" for e in shown_sources]
    if answer.unsupported_sentences:
        lines += ["", "Check these statements (their words or figures are not in the source):"]
        lines += [f"  {sentence}" for sentence in answer.unsupported_sentences]
    return "\n".join(lines)


def _source_line(hit: Hit) -> str:
    page = f", page {hit.chunk.page}" if hit.chunk.page else ""
    return f"{hit.chunk.breadcrumb} — {hit.chunk.source}{page}"
