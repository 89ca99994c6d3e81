"""Figures in any ordinary form: the values a text states, and whether a claim is among them.

A correct answer may write a figure otherwise than its source: "12 months" for
"twelve (12) months" or "one year", "KES 40000" for "KES 40,000", "3 million" for
"3,000,000", "17:00" for "5 p.m.", "2026-12-01" for "1 December 2026", "8 weeks"
for a 6-week cycle and a 2-week cooldown. `stated` reads every value a source
states in such forms (digits, number words, scale words, month names next to a
number, durations and times converted); `derived` adds what two figures of the
cited sources make together (their sum, difference or product) and the number of
items of each of their lists, a sum, difference or product counting only when one
of its two figures is itself written in the same sentence ("8 weeks: a 6-week cycle
and a 2-week cooldown"). An answer's figure (`claimed`: every number written in
digits) is supported when one of its readings is among them. A figure no source
states in any form ("12.05%" for a 12% rate) stays unsupported: decimals are never
derived.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

__all__ = ["Claim", "Derived", "claimed", "derived", "stated", "unsupported"]

_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
# A number glued to letters and digits ("5D992", "v2") is a code, not a figure.
_NOT_CODE = r"(?![A-Za-z]*\d)(?!,\d)"
_TOKEN = re.compile(rf"(?<![\w.]){_NUMBER}{_NOT_CODE}|[A-Za-z]+|%", re.I)
_CLAIM = re.compile(
    rf"(?<![\w.]){_NUMBER}{_NOT_CODE}(?:\s*(?:k|m|bn|thousand|million|billion)\b)?", re.I
)
_TIME = re.compile(r"(?<![\d.])(\d{1,2})(?::(\d{2}))?\s*(?:([ap])\.?\s?m\b\.?)?", re.I)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+\u2022]|\d+[.)])\s+\S", re.M)
_SMALL = {
    word: value
    for value, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
        ]
    )
}
_TENS = {
    word: 10 * value
    for value, word in enumerate(
        ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"], 2
    )
}
_SCALES = {
    "hundred": 100,
    "thousand": 1000,
    "million": 10**6,
    "billion": 10**9,
    "k": 1000,
    "m": 10**6,
    "bn": 10**9,
}
_ORDINALS = {
    word: value
    for value, word in enumerate(
        [
            "first",
            "second",
            "third",
            "fourth",
            "fifth",
            "sixth",
            "seventh",
            "eighth",
            "ninth",
            "tenth",
            "eleventh",
            "twelfth",
        ],
        1,
    )
} | {"thirds": 3, "quarters": 4, "fifths": 5, "twentieth": 20, "thirtieth": 30}
_SPECIAL: dict[str, tuple[Decimal, ...]] = {
    "dozen": (Decimal(12),),
    "once": (Decimal(1),),
    "twice": (Decimal(2),),
    "single": (Decimal(1),),
    "double": (Decimal(2),),
    "half": (Decimal("0.5"), Decimal(50)),
    "quarter": (Decimal("0.25"), Decimal(25)),
    "fortnight": (Decimal(2), Decimal(14)),
}
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            "january jan",
            "february feb",
            "march mar",
            "april apr",
            "may",
            "june jun",
            "july jul",
            "august aug",
            "september sep sept",
            "october oct",
            "november nov",
            "december dec",
        ),
        1,
    )
    for name in names.split()
}
# A value followed by one of these is also the same length in the related unit.
_PER_UNIT = {
    "year": ((12,), (52,), (365,)),
    "month": ((Decimal(1) / 12,), (30,)),
    "week": ((7,), (Decimal(1) / 52,)),
    "day": ((24,), (Decimal(1) / 7,), (Decimal(1) / 30,)),
    "hour": ((60,), (Decimal(1) / 24,)),
    "minute": ((Decimal(1) / 60,),),
    "percent": ((Decimal("0.01"),),),
}
_UNIT_WORDS = {
    "year": "year",
    "years": "year",
    "yr": "year",
    "yrs": "year",
    "month": "month",
    "months": "month",
    "week": "week",
    "weeks": "week",
    "day": "day",
    "days": "day",
    "hour": "hour",
    "hours": "hour",
    "hrs": "hour",
    "minute": "minute",
    "minutes": "minute",
    "mins": "minute",
    "percent": "percent",
    "%": "percent",
    "cent": "percent",
}
_MAX_DERIVED = 10**7
_MAX_OPERANDS = 120


@dataclass(frozen=True, slots=True)
class Claim:
    """A figure an answer writes in digits, and the values it may stand for."""

    text: str
    values: frozenset[Decimal]


def stated(text: str) -> frozenset[Decimal]:
    """Return every value ``text`` states, in digits or words, with its usual conversions."""
    tokens = [t.lower() for t in _TOKEN.findall(text)]
    values: set[Decimal] = {Decimal(0)}
    for index, token in enumerate(tokens):
        after = tokens[index + 1 : index + 3]
        found = _token_values(tokens, index)
        if token in _MONTHS and _next_to_number(tokens, index):
            found.add(Decimal(_MONTHS[token]))
        for value in list(found):
            found |= _converted(value, after)
        values |= found
    values |= _clock_hours(text)
    return frozenset(v.normalize() for v in values)


def _clock_hours(text: str) -> set[Decimal]:
    """Return the other reading of each time of day: "5 p.m." is also 17, "17:00" also 5."""
    out: set[Decimal] = set()
    for match in _TIME.finditer(text):
        hour = int(match[1])
        if match[3] and match[3].lower() == "p" and 1 <= hour < 12:
            out.add(Decimal(hour + 12))
        elif match[2] and 13 <= hour <= 23:
            out.add(Decimal(hour - 12))
    return out


@dataclass(frozen=True, slots=True)
class Derived:
    """What the figures of some sources can make: their whole numbers, their lists' sizes."""

    operands: frozenset[Decimal]
    counts: frozenset[Decimal]


def derived(text: str) -> Derived:
    """Return the whole figures of ``text`` (to combine) and the item count of each list.

    Only whole numbers combine (a decimal must be stated), and only figures written in
    ``text`` itself, without conversions, so what they make stays a small set.
    """
    whole = sorted(
        {v for v in _plain_values(text) if v == v.to_integral_value() and 0 < v < _MAX_DERIVED}
    )[:_MAX_OPERANDS]
    return Derived(frozenset(whole), frozenset(Decimal(n) for n in _list_sizes(text)))


def _made(anchors: Iterable[Decimal], operands: Iterable[Decimal]) -> set[Decimal]:
    """Return the sums, differences and products of each anchor with each operand."""
    out: set[Decimal] = set()
    for a, b in itertools.product(anchors, operands):
        out |= {a + b, abs(a - b), a * b}
    return {v.normalize() for v in out if v < _MAX_DERIVED}


def claimed(sentence: str) -> tuple[Claim, ...]:
    """Return the figures ``sentence`` writes in digits, each with its readings."""
    claims = []
    for match in _CLAIM.finditer(sentence):
        number = re.match(_NUMBER, match[0])
        base = _decimal(number[0]) if number else None
        if number is None or base is None:
            continue
        word = match[0][number.end() :].strip().lower()
        values = {base} | ({base * _SCALES[word]} if word in _SCALES else set())
        claims.append(Claim(match[0].strip(), frozenset(v.normalize() for v in values)))
    return tuple(claims)


def unsupported(
    sentence: str, *, known: frozenset[Decimal], also: Derived | None = None
) -> tuple[str, ...]:
    """Return the figures of ``sentence`` that ``known`` (and ``also``) does not account for.

    With ``also``, a figure may be the number of items of a list, or the sum, difference
    or product of one of ``also``'s operands and another figure the sentence states that
    is known: "8 weeks: a 6-week cycle and a 2-week cooldown" (6 + 2), never a figure
    made of two numbers the sentence does not mention.
    """
    claims = claimed(sentence)
    extra: set[Decimal] = set()
    if also is not None:
        anchors = {v for claim in claims for v in claim.values & known & also.operands}
        extra = set(also.counts) | _made(anchors, also.operands)
    return tuple(
        claim.text for claim in claims if not claim.values & known and not claim.values & extra
    )


def _token_values(tokens: list[str], index: int) -> set[Decimal]:
    token = tokens[index]
    if token[0].isdigit():
        value = _decimal(token)
        if value is None:
            return set()
        after = tokens[index + 1] if index + 1 < len(tokens) else ""
        return {value} | ({value * _SCALES[after]} if after in _SCALES else set())
    if token in _SPECIAL:
        return set(_SPECIAL[token])
    if token in _ORDINALS:
        return {Decimal(_ORDINALS[token])}
    if token in _SMALL or token in _TENS:
        return {_words_value(tokens, index)}
    return set()


def _words_value(tokens: list[str], start: int) -> Decimal:
    """Return the value of the number words from ``start``: "two hundred and five" is 205."""
    total, group = 0, 0
    for token in tokens[start:]:
        if token in _SMALL or token in _TENS:
            group += _SMALL.get(token, 0) + _TENS.get(token, 0)
        elif token == "hundred":
            group = max(group, 1) * 100
        elif token in ("thousand", "million", "billion"):
            total += max(group, 1) * _SCALES[token]
            group = 0
        elif token != "and":
            break
    return Decimal(total + group)


def _converted(value: Decimal, after: list[str]) -> set[Decimal]:
    """Return ``value`` in related units: "1 year" is also 12 months, "12%" also 0.12."""
    unit = _UNIT_WORDS.get(after[0], "") if after else ""
    if after[:1] == ["per"] and after[1:2] == ["cent"]:
        unit = "percent"
    out = {value * factor for factors in _PER_UNIT.get(unit, ()) for factor in factors}
    return {v for v in out if v == v.to_integral_value() or unit == "percent"}


def _next_to_number(tokens: list[str], index: int) -> bool:
    near = tokens[max(index - 1, 0) : index] + tokens[index + 1 : index + 2]
    return any(t[0].isdigit() for t in near)


def _plain_values(text: str) -> set[Decimal]:
    tokens = [t.lower() for t in _TOKEN.findall(text)]
    return {v for i in range(len(tokens)) for v in _token_values(tokens, i)}


def _list_sizes(text: str) -> set[int]:
    """Return how many items each list of ``text`` has (consecutive item lines)."""
    sizes, run = set(), 0
    for line in text.splitlines():
        if _LIST_ITEM.match(line):
            run += 1
            continue
        if line.strip() and run:
            sizes.add(run)
            run = 0
    if run:
        sizes.add(run)
    return sizes


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None
