"""Whole tables for "each" and "all" questions.

"What is the loan interest rate for each loan product?" is answered by a table
of five rows; quoting the two best rows as separate one-row tables drops the
other three and repeats the header. When a question asks about each or all
of something and the best unit is a table row, the answer quotes that table
once: its header, then every row of it the source holds, in document order.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from assistant.answering.ranking import Candidate, Ranked

__all__ = ["WholeTable", "asks_for_all", "whole_table"]

logger = logging.getLogger(__name__)

_ALL = re.compile(r"\b(?:each|every|all(?!\s+right)|list\s+(?:of|the|all))\b", re.I)
_HEADER_LINES = 2
_MAX_ROWS = 12


@dataclass(frozen=True, slots=True)
class WholeTable:
    """A table quoted whole: source number, Markdown text, and the row units it replaces."""

    number: int
    text: str
    position: int
    rows: frozenset[str]


def asks_for_all(question: str) -> bool:
    """Return whether ``question`` asks about each or all of something."""
    return bool(_ALL.search(question))


def whole_table(
    question: str, chosen: Sequence[Ranked], candidates: Sequence[Candidate]
) -> WholeTable | None:
    """Return the table of the best chosen row, whole, for an "each/all" question; else None."""
    if not chosen or not asks_for_all(question):
        return None
    lead = next((c for c in chosen if c.candidate.unit.is_table), None)
    if lead is None or (lead is not chosen[0] and not _first_is_about_it(chosen, lead)):
        return None
    number = lead.candidate.number
    header = _header(lead.candidate.unit.text)
    rows = [
        c.unit
        for c in candidates
        if c.number == number and c.unit.is_table and _header(c.unit.text) == header
    ]
    rows.sort(key=lambda u: u.position)
    if len(rows) < 2 or len(rows) > _MAX_ROWS:
        return None
    lines = [*header, *(u.text.splitlines()[-1] for u in rows)]
    logger.debug("each/all question: quoting a table of %d rows whole", len(rows))
    return WholeTable(number, "\n".join(lines), rows[0].position, frozenset(u.text for u in rows))


def _first_is_about_it(chosen: Sequence[Ranked], lead: Ranked) -> bool:
    """A sentence leading before the row it repeats still lets the table stand in for both."""
    return chosen[0].candidate.number == lead.candidate.number


def _header(text: str) -> tuple[str, ...]:
    return tuple(text.splitlines()[:_HEADER_LINES])
