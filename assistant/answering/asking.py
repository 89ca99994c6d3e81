"""What kind of value a question asks for, and whether a passage states one.

"What percentage of tax is withheld?" wants a percentage; "How long do I have
to appeal?" a duration; "What is the phone number of the hotline?" a phone
number. A passage about the right topic that states no value of that kind
does not answer the question: on real handbooks this is the commonest way a
question the documents do not cover looks covered (the topic is there, the
figure is not). Yes/no questions ("Is there a number I can ring?") ask for no
value: "We do not offer telephone support" answers them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from assistant.words import content_words

__all__ = [
    "ANY_FIGURE",
    "ASKING_WORDS",
    "ValueKind",
    "asked_value",
    "missing_years",
    "question_parts",
    "states_value",
    "wanted_value",
]

# The question's own words that say what kind of answer it wants, not what it is about.
ASKING_WORDS = frozenset(
    content_words(
        "what which how many much long often who whom whose when where why get gets got can "
        "could would may might allowed able need needs tell explain happen happens mean means "
        "policy policies rule rules say says said there please know want compare compared "
        "comparison difference differences differ versus soon quickly"
    )
)
_NUMBER = (
    r"(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"fifteen|twenty|thirty|forty|fifty|sixty|ninety|hundred|thousand)"
)
_QUANTITY = rf"(?:{_NUMBER}|a|an|half(?: a| an)?)"
_TIME_UNIT = (
    r"(?:(?:business|working|calendar|banking)\s+)?"
    r"(?:days?|weeks?|months?|years?|hours?|minutes?|quarters?)"
)
_MONTHS = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
# A question that can be answered "yes" or "no" asks for no value, whatever else it says.
_YES_NO = re.compile(
    r"^\s*(?:is|are|was|were|do|does|did|can|could|may|might|will|would|should|shall|has|have)\b",
    re.I,
)


_MENTIONS_FIGURE = re.compile(
    r"\b(?:how (?:many|much|long|often|soon|old|quickly|far|big|large)|what (?:percentage|"
    r"proportion|age|amount|rate|fee|price|cost|limit|deadline|date)|when|by what date|"
    r"minimum|maximum|max|min|limit|rate|fee|cap|deadline|within|days?|weeks?|months?|years?)\b",
    re.I,
)
_SECOND_QUESTION = re.compile(
    r",?\s+and\s+(?=(?:what|how|when|where|who|whom|which|why|is|are|does|do|did|can|could|"
    r"must|should|will|would|may|has|have)\b)",
    re.I,
)
_COMPARED = re.compile(r"\s+(?:compared?s?|differs?)\s+(?:with|to|from)\s+", re.I)
# "...interest on " before the thing compared: what is compared is said once.
_OWNER = re.compile(r".*\b(?:of|on|for|in|at)\s+", re.I)
_BETWEEN = re.compile(r"\bdifferences?\s+between\s+(.+?)\s+and\s+(.+)$", re.I)
_TWO = 2
_PART_WORDS = 2


@dataclass(frozen=True, slots=True)
class ValueKind:
    """A kind of value: its name as a user reads it, and how a passage states one."""

    name: str
    stated: re.Pattern[str]
    # Whether a passage lacking such a value cannot answer ("how many"), or only
    # ranks lower ("when": "after three months" and "once approved" both answer).
    decisive: bool = True


# "Where a fee is a percentage" states none: a percentage is a number with its sign or word.
PERCENTAGE = ValueKind(
    "a percentage", re.compile(rf"\d\s*%|\b{_NUMBER}\s*-?\s*(?:per\s?cent|percent)\b", re.I)
)
AMOUNT = ValueKind(
    "an amount",
    re.compile(
        r"[$€£¥₹]\s?\d|\b(?:USD|EUR|GBP|KES|KSh|Ksh|INR|US\s?\$)\s?\d|"
        r"\d[\d,.]*\s*(?:k|m|bn)?\s*(?:dollars|euros|pounds|shillings|USD|EUR|GBP|KES)\b|"
        rf"\b{_NUMBER}\s+(?:hundred|thousand|million)?\s*(?:U\.?S\.?\s+)?"
        r"(?:dollars|euros|pounds|shillings)\b|"
        rf"\b{_QUANTITY}\s+{_TIME_UNIT}(?:'s)?\s+(?:of\s+)?(?:pay|salary|wages)\b|"
        rf"\b(?:twice|double|triple|{_NUMBER}\s+times)\b|"
        r"\b(?:is|are|for) free\b|\bfree of charge\b|\bno (?:fee|charge|cost)\b|"
        r"\bat no (?:cost|charge)\b|\d\s*%",
        re.I,
    ),
)
DURATION = ValueKind(
    "a length of time",
    re.compile(
        rf"\b{_QUANTITY}(?:\s*(?:-|to|\u2013)\s*\d+)?\s*-?\s*{_TIME_UNIT}\b|"
        r"\b(?:immediately|promptly|annually|monthly|weekly|daily|yearly|quarterly|"
        r"at once|same day|next day|indefinitely|permanently|until)\b",
        re.I,
    ),
)
# "How long must the passcode be?" asks for a length, which may be one of time or not.
LENGTH = ValueKind(
    "a length",
    re.compile(
        rf"{DURATION.stated.pattern}|\b{_NUMBER}\s*-?\s*(?:characters?|digits?|letters?|words?|"
        r"symbols?|pages?|lines?|km|kilomet(?:re|er)s?|miles?|met(?:re|er)s?|feet|foot|inch(?:es)?|"
        r"cm|mm)\b",
        re.I,
    ),
)
DATE = ValueKind(
    "a date",
    re.compile(
        rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTHS}\b|\b{_MONTHS}\s+\d{{1,2}}\b|"
        r"\b\d{1,2}(?:st|nd|rd|th)\b|\b(?:19|20)\d\d\b|\b\d{4}-\d\d-\d\d\b|"
        r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b|"
        r"\b(?:first|last|end|beginning|start) of (?:the|each|every)\b",
        re.I,
    ),
)
COUNT = ValueKind("a number", re.compile(rf"\b{_NUMBER}\b", re.I))
SIZE = ValueKind(
    "a size",
    re.compile(r"\d\s*(?:[KMGT]i?B|bytes|kilobytes|megabytes|gigabytes|terabytes)\b", re.I),
)
PHONE = ValueKind("a phone number", re.compile(r"\+?\(?\d[\d ()./-]{6,}\d"))

# "What should I do?" asks for an action: an instruction or an obligation.
ACTION = ValueKind(
    "an action",
    re.compile(
        r"\b(?:must|should|shall|need to|needs to|are required to|is required to|have to|has to)\b|"
        r"^\W*(?:please\s+)?(?:report|contact|call|tell|inform|notify|send|submit|email|write|ask|"
        r"go|visit|complete|fill|return|change|reset|lock|apply|request|keep|do not|don't|never|"
        r"always|first|then)\b",
        re.I,
    ),
    decisive=False,
)
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
RATE = ValueKind("a rate", re.compile(f"{PERCENTAGE.stated.pattern}|{AMOUNT.stated.pattern}", re.I))
TIME = ValueKind(
    "a time",
    re.compile(f"{DURATION.stated.pattern}|{DATE.stated.pattern}", re.I),
    decisive=False,
)
# Checked in order: the first that matches the question says what it asks for.
_ASKS: tuple[tuple[re.Pattern[str], ValueKind], ...] = (
    (re.compile(r"\b(?:phone|telephone|fax)\s+number\b", re.I), PHONE),
    (re.compile(r"\b(?:gigabytes?|megabytes?|terabytes?|file size)\b", re.I), SIZE),
    (
        re.compile(
            r"\b(?:percentage|percent|per cent|what share|what proportion|interest rate)\b", re.I
        ),
        PERCENTAGE,
    ),
    (
        re.compile(r"\bhow long\b(?:(?!\b(?:take|takes|took|last|lasts)\b)[^?])*\bbe\W*$", re.I),
        LENGTH,
    ),
    (
        re.compile(
            r"\bhow (?:long|soon|quickly|far in advance)\b|"
            r"\bhow much (?:\w+ ){0,2}(?:time|leave|notice|holiday|vacation)\b|"
            rf"\bhow many {_TIME_UNIT}\b|\bwithin how\b|\bwhat (?:notice period|deadline)\b",
            re.I,
        ),
        DURATION,
    ),
    (
        re.compile(
            r"\b(?:what|which) (?:date|day of the month|day of the week|month|year)\b|"
            r"\bon (?:what|which) (?:date|day)\b|\bby when\b",
            re.I,
        ),
        DATE,
    ),
    (
        re.compile(
            r"\bhow much\b|\bin (?:euros|dollars|pounds|shillings)\b|"
            r"\bwhat (?:is the |are the )?(?:fee|fees|price|cost|charge|reward|salary|allowance|"
            r"per diem|minimum balance|maximum amount|amount)\b",
            re.I,
        ),
        AMOUNT,
    ),
    (re.compile(r"\bwhat (?:is|are) the (?:\w+ )?rates?\b", re.I), RATE),
    (
        re.compile(
            r"\bhow (?:many|old)\b|\bwhat (?:is the )?(?:minimum |maximum )?age\b|"
            r"\b(?:minimum|maximum) (?:\w+ )?length\b|"
            r"\bwhat is the (?:highest|lowest|largest|smallest|biggest|yearly|annual|monthly) ",
            re.I,
        ),
        COUNT,
    ),
    (re.compile(r"^\W*when\b", re.I), TIME),
    (
        re.compile(
            r"\bwhat (?:should|do|must|can|shall) (?:i|we|you|staff|they) do\b|"
            r"\bwhat (?:are|is) the (?:steps|procedure|process)\b|\bwhat steps\b",
            re.I,
        ),
        ACTION,
    ),
)


ANY_FIGURE = ValueKind(
    "a figure",
    re.compile(
        r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|"
        r"twenty|thirty|sixty|ninety|hundred|thousand|half|double|twice)\b",
        re.I,
    ),
    decisive=False,
)


def asked_value(question: str) -> ValueKind | None:
    """Return the kind of value ``question`` asks for, or None (yes/no and open questions).

    Only the last sentence counts: "Someone posted my phone number. Is that
    allowed?" is a yes/no question about a phone number, not a request for one.
    """
    asking = _last_sentence(question)
    if _YES_NO.search(asking):
        return None
    for asks, kind in _ASKS:
        if asks.search(asking):
            # Of a two-part question ("What should I do if ..., and when must ...?")
            # each part asks for its own value; the action is the first part's only.
            if kind is ACTION and question_parts(question):
                return None
            return kind
    return None


def question_parts(question: str) -> tuple[str, ...]:
    """Return the two questions of "What per diem do I get, and how soon must I claim?".

    A comparison has two parts too: "How does the interest on an Emergency
    Loan compare with a School Fees Loan?", "What is the difference between
    annual leave and sick leave?". A question that asks one thing returns no
    parts: only a second question word after "and" splits ("deposits and share
    capital" is one topic).
    """
    asking = _last_sentence(question)
    compared = _BETWEEN.search(asking)
    parts: tuple[str, ...]
    if compared:
        parts = (compared.group(1), compared.group(2))
    else:
        parts = tuple(_SECOND_QUESTION.split(asking, maxsplit=1))
        if len(parts) == 1:
            parts = _compared_parts(asking)
    parts = tuple(p.strip(" ,?") for p in parts)
    if len(parts) != _TWO or any(len(p.split()) < _PART_WORDS for p in parts):
        return ()
    return parts


def wanted_value(question: str) -> ValueKind | None:
    """Return what a unit should state to rank higher: the asked value, or any figure.

    "What is the limit for taxis?" names no kind, but a unit stating a figure
    answers it better than one that does not; unlike `asked_value`, this never
    decides that the documents do not cover a question.
    """
    kind = asked_value(question)
    if kind is None and _MENTIONS_FIGURE.search(question):
        return ANY_FIGURE
    return kind


def _compared_parts(asking: str) -> tuple[str, ...]:
    """Split "the interest on an Emergency Loan compare with a School Fees Loan".

    The second thing inherits what is compared: "the interest on a School Fees Loan".
    """
    parts = _COMPARED.split(asking, maxsplit=1)
    if len(parts) != _TWO:
        return tuple(parts)
    first, second = parts
    owner = _OWNER.search(first)
    if owner is None:
        return (first, second)
    return (first, first[: owner.end()] + second)


def missing_years(question: str, texts: Iterable[str]) -> tuple[str, ...]:
    """Return the years ``question`` names that none of ``texts`` mentions ("dividends in 2019")."""
    years = dict.fromkeys(_YEAR.findall(question))
    if not years:
        return ()
    seen: set[str] = set()
    for text in texts:
        seen.update(_YEAR.findall(text))
    return tuple(y for y in years if y not in seen)


def _last_sentence(text: str) -> str:
    sentences = [s for s in _SENTENCE.split(text) if s.strip()]
    return sentences[-1] if sentences else text


def states_value(kind: ValueKind, text: str) -> bool:
    """Return whether ``text`` states a value of ``kind``."""
    return bool(kind.stated.search(text))
