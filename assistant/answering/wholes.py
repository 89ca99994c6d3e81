"""Whole facts: tables for "each" and "all" questions, lead-ins with their lists, exceptions.

"What is the loan interest rate for each loan product?" is answered by a table
of five rows; quoting the two best rows as separate one-row tables drops the
other three and repeats the header. When a question asks about each or all
of something and the best unit is a table row, the answer quotes that table
once: its header, then every row of it the source holds, in document order.

A quoted unit also carries what completes it in its own section (`whole_fact`):
a sentence opening "Doing so ..." or "This means ..." the sentence before it,
a lead-in ending in ":" its short list ("should not exceed the following
amounts: Year 1: $50 USD; ..."), and a general rule the exception that names
the case the question asks about ("A processing fee of 1% ... is deducted at
disbursement." then "Emergency Loans are exempt." for an emergency loan).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from assistant.answering.ranking import Candidate, Ranked, focus_words, matched
from assistant.answering.units import AnswerUnit
from assistant.words import WORD, content_words

__all__ = ["WholeFact", "WholeTable", "asks_for_all", "is_exception", "whole_fact", "whole_table"]

logger = logging.getLogger(__name__)

_ALL = re.compile(r"\b(?:each|every|all(?!\s+right)|list\s+(?:of|the|all))\b", re.I)
_HEADER_LINES = 2
_MAX_ROWS = 12
# A lead-in's list is quoted with it when it is this short (items, words).
_MAX_ITEMS = 8
_MAX_LIST_WORDS = 45
_MAX_EXCEPTION_WORDS = 35
# A sentence that opens by pointing back at the one before it ("Doing so is known as
# tipping off", "In that case, ...") is quoted with that sentence.
_BACK = re.compile(
    r"^(?:(?:this|that|these|those|it|they)\s+(?:is|are|was|were|means?|includes?|applies|apply"
    r"|can|cannot|will|may|must|does|do|has|have|covers?|requires?)\b"
    r"|such\b|doing\s+so\b|in\s+(?:that|this|such\s+a|such)\s+case\b|if\s+so\b|otherwise\b)",
    re.I,
)
_MAX_BEFORE_WORDS = 35
_ITEM_END = re.compile(r"(?:[;,]?\s+(?:and|or))?[\s;,.]*$", re.I)
# A sentence that carves a case out of the rule before it: "Emergency Loans are
# exempt.", "This does not apply to interns.", "No fee is charged on ...".
_EXCEPTION = re.compile(
    r"\b(?:except|exempt(?:ed)?|excluded|excluding|unless|waived"
    r"|(?:does|do|shall|will)\s+not\s+apply|(?:doesn|don)[\u2019']t\s+apply|not\s+applicable"
    r"|not\s+(?:be\s+)?(?:charged|required|payable|due|eligible))\b"
    r"|^no\s+\w|\bno\s+(?:\w+\s+){0,3}(?:is|are|will\s+be)\s+(?:charged|payable|due|deducted)\b",
    re.I,
)


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


@dataclass(frozen=True, slots=True)
class WholeFact:
    """The text quoted for a unit, and the other units of its section it now includes."""

    text: str
    joined: frozenset[str]


def is_exception(text: str) -> bool:
    """Return whether ``text`` carves a case out of a rule ("Emergency Loans are exempt.")."""
    return bool(_EXCEPTION.search(text)) and not text.rstrip().endswith(":")


def whole_fact(question: str, ranked: Ranked, candidates: Sequence[Candidate]) -> WholeFact:
    """Return what to quote for ``ranked``: its text, and what completes it in its section.

    A sentence pointing back ("Doing so ...") gets the sentence before it; a lead-in
    ending in ":" gets its list when the list is short; a rule gets the exception in
    its section that names a case of the question the rule does not.
    """
    unit = ranked.candidate.unit
    section = [
        c.unit
        for c in candidates
        if c.number == ranked.candidate.number
        and c.unit.headings == unit.headings
        and c.unit.text != unit.text
    ]
    text, joined = ranked.shown, []
    before = _antecedent(unit, section)
    if before is not None:
        text = f"{before.text} {text}"
        joined.append(before.text)
    items = _list_of(unit, section)
    if items:
        text = f"{text} {'; '.join(_item(u.text) for u in items)}."
        joined += [u.text for u in items]
    exception = _exception(question, unit, section)
    if exception is not None:
        stop = "" if text.rstrip().endswith((".", "!", "?", ";", ":")) else "."
        text = f"{text}{stop} {exception.text}"
        joined.append(exception.text)
    return WholeFact(text, frozenset(joined))


def _antecedent(unit: AnswerUnit, section: Sequence[AnswerUnit]) -> AnswerUnit | None:
    """Return the sentence right before ``unit`` when ``unit`` opens by pointing back at it."""
    if unit.kind != "sentence" or not _BACK.match(unit.text):
        return None
    before = next((u for u in section if u.position == unit.position - 1), None)
    if before is None or before.kind not in ("sentence", "definition"):
        return None
    if before.text.rstrip().endswith(":") or len(WORD.findall(before.text)) > _MAX_BEFORE_WORDS:
        return None
    return before


def _item(text: str) -> str:
    """An item as one of a run joined by "; " (its own "; and" or final stop dropped)."""
    return _ITEM_END.sub("", text)


def _list_of(unit: AnswerUnit, section: Sequence[AnswerUnit]) -> list[AnswerUnit]:
    """Return the short list a lead-in ending in ":" introduces, in order; else nothing."""
    if unit.is_table or not unit.text.rstrip().endswith(":"):
        return []
    items = sorted(
        (
            u
            for u in section
            if u.kind in ("item", "definition")
            and u.position > unit.position
            and u.context.strip().endswith(unit.text.strip())
        ),
        key=lambda u: u.position,
    )
    words = sum(len(WORD.findall(u.text)) for u in items)
    if not items or len(items) > _MAX_ITEMS or words > _MAX_LIST_WORDS:
        return []
    return items


def _exception(question: str, unit: AnswerUnit, section: Sequence[AnswerUnit]) -> AnswerUnit | None:
    """Return the exception of ``unit``'s section that names what the question asks about.

    The case is a topic word of the question that the rule does not name and that,
    in the section, only the exception names ("emergency" for "Is there a processing
    fee on an emergency loan?" against the general 1% fee); a word the section
    repeats ("loan") or its headings name is its topic, not a case carved out of it.
    The nearest such sentence wins.
    """
    if unit.kind in ("row", "item") or is_exception(unit.text):
        return None
    wanted = focus_words(question)
    case = wanted - matched(wanted, content_words(" ".join((unit.text, *unit.headings))))
    if not case:
        return None
    found = []
    for other in section:
        if other.kind in ("row", "item") or len(WORD.findall(other.text)) > _MAX_EXCEPTION_WORDS:
            continue
        named = matched(case, content_words(other.text))
        if not named or not is_exception(other.text):
            continue
        rest = " ".join(u.text for u in section if u is not other)
        if named - matched(named, content_words(rest)):
            found.append(other)
    return min(found, key=lambda u: abs(u.position - unit.position), default=None)
