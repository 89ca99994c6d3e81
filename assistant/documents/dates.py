"""Effective and updated dates: parse the usual spellings, read them off a document's top.

Loaders pass what their format states explicitly (front matter, ``<meta>`` tags, a
PDF info key) and what it only implies (a file's created and modified timestamps,
set by whatever tool last saved it). `resolve_dates` picks, per date, the first of:
the explicit claims, an "Effective ...: DATE" / "Last updated DATE" line near the top
of the text, then the implied claims. A stated "Effective from" line beats a
timestamp because a template copied years ago, or a re-save, moves the timestamp but
not the date the policy took effect. ``DocMeta.date_source`` records the winner.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from dataclasses import dataclass

from assistant.types import DocMeta

__all__ = [
    "CUSTOM_PROPERTIES",
    "FRONT_MATTER",
    "META_TAG",
    "PROPERTIES",
    "TEXT",
    "XMP",
    "DateClaim",
    "dates_in_text",
    "parse_date",
    "resolve_dates",
]

FRONT_MATTER = "front matter"
META_TAG = "meta tag"
PROPERTIES = "document properties"
CUSTOM_PROPERTIES = "custom properties"
XMP = "XMP metadata"
TEXT = "text"

# Only the top of a document states its dates; further down "effective" is policy
# content ("a change is effective from the next payroll"), not the document's date.
_HEAD_CHARS = 1500

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE = (
    rf"(?:\d{{4}}-\d{{1,2}}-\d{{1,2}}|{_DAY}\s+(?:of\s+)?{_MONTH},?\s+\d{{4}}"
    rf"|{_MONTH}\s+{_DAY},?\s+\d{{4}})"
)
_ISO = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})")
# A trailing time is allowed, and a leading weekday ("Mon, 01 Sep 2025 09:00:00 GMT").
_WEEKDAY = r"^(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*,?\s+)?"
_DAY_FIRST = re.compile(
    rf"{_WEEKDAY}(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH}),?\s+(\d{{4}})\b", re.I
)
_MONTH_FIRST = re.compile(
    rf"{_WEEKDAY}({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I
)
_PDF_DATE = re.compile(r"^D:(\d{4})(\d{2})(\d{2})")
_EFFECTIVE = re.compile(
    r"\b(?:effective(?:\s+date)?|(?:takes?|took)\s+effect|(?:comes?|came)\s+into\s+"
    r"(?:force|effect)|in\s+force)\b\s*(?:[:\-\u2013\u2014]\s*)?(?:(?:from|on|as\s+(?:of|at))\s+)?"
    rf"({_DATE})",
    re.IGNORECASE,
)
_UPDATED = re.compile(
    r"\b(?:last\s+(?:updated|revised|reviewed|modified|amended)|updated|revised|amended)\b"
    rf"\s*(?:[:\-\u2013\u2014]\s*)?(?:on\s+)?({_DATE})",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class DateClaim:
    """Dates one part of a document states (ISO ``YYYY-MM-DD`` or ""), and which part."""

    source: str
    effective: str = ""
    updated: str = ""


def parse_date(value: object) -> str:
    """Return ``value`` as an ISO ``YYYY-MM-DD`` date, or "" when it is not a date.

    Accepts `datetime.date` values, ISO dates and timestamps ("2025-09-01",
    "2025-09-01T09:00:00Z"), PDF dates ("D:20250901..."), "1 September 2025",
    "1st Sept. 2025" and "September 1, 2025". Ambiguous numeric forms such as
    "01/09/2025" are refused rather than guessed.
    """
    if isinstance(value, dt.date):
        return value.isoformat()[:10]
    raw = " ".join(str(value or "").split())
    for pattern, order in ((_ISO, "ymd"), (_PDF_DATE, "ymd")):
        match = pattern.match(raw)
        if match:
            return _iso(*(match.group(order.index(c) + 1) for c in "ymd"))
    match = _DAY_FIRST.match(raw)
    if match:
        return _iso(match.group(3), _month(match.group(2)), match.group(1))
    match = _MONTH_FIRST.match(raw)
    if match:
        return _iso(match.group(3), _month(match.group(1)), match.group(2))
    return ""


def dates_in_text(text: str) -> DateClaim:
    """Return the effective and last-updated dates stated near the top of ``text``."""
    head = text[:_HEAD_CHARS]
    found = []
    for pattern in (_EFFECTIVE, _UPDATED):
        match = pattern.search(head)
        found.append(parse_date(match.group(1)) if match else "")
    return DateClaim(TEXT, effective=found[0], updated=found[1])


def resolve_dates(
    meta: DocMeta,
    text: str,
    *,
    explicit: tuple[DateClaim, ...] = (),
    implied: tuple[DateClaim, ...] = (),
) -> DocMeta:
    """Fill ``meta``'s dates from the best claim and record where the date came from.

    Args:
        meta: Metadata so far; dates it already holds came from front matter.
        text: The document text, whose top may state its dates.
        explicit: Claims the format makes on purpose (meta tags, info keys), best first.
        implied: Timestamps the authoring tool wrote, used only when nothing else dates it.

    Returns:
        ``meta`` with ``effective_date``, ``updated_date`` and ``date_source`` set;
        ``date_source`` names where the effective date (or, without one, the
        updated date) came from, and is "" when the document states no date.
    """
    own = DateClaim(FRONT_MATTER, meta.effective_date, meta.updated_date)
    claims = (own, *explicit, dates_in_text(text), *implied)
    effective = next((c for c in claims if c.effective), None)
    updated = next((c for c in claims if c.updated), None)
    dating = effective or updated
    return dataclasses.replace(
        meta,
        effective_date=effective.effective if effective else "",
        updated_date=updated.updated if updated else "",
        date_source=dating.source if dating else "",
    )


def _month(name: str) -> str:
    return str(_MONTHS.get(name.rstrip(".").lower(), 0))


def _iso(year: str, month: str, day: str) -> str:
    try:
        return dt.date(int(year), int(month), int(day)).isoformat()
    except ValueError:
        return ""
