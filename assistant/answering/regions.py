"""Rules of a place: a unit that applies only somewhere the question does not name.

"How long is paid leave when I have a baby?" asks for the organisation's own
rule; a sentence about one state's or country's programme ("If the country of
residence provides 6 weeks of maternity leave ...", "US-based teammates ...",
"statutory benefits") answers a narrower question. Such a unit ranks a little
below one that names no place, unless the question names the place or asks
about places at all ("I'm based outside the US", "in Crimea", "in my country").

No list of place names: a unit is regional when it speaks of a kind of place or
law (country, state, province, region, jurisdiction, statutory, federal,
national, government, local law), of living or being based somewhere
("if you live in", "US-based"), or of the State as a proper name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from assistant.answering.ranking import Ranked
from assistant.words import WORD

__all__ = ["asks_about_places", "is_regional", "own_rules_first"]

_KINDS = (
    r"countr(?:y|ies)|statutor(?:y|ily)|jurisdictions?|provinces?|provincial|territor(?:y|ies)"
    r"|federal|nationals?|nationwide|regions?|regional|governments?|local\s+laws?"
    r"|abroad|overseas|international"
)
_STATE = (
    r"(?:the|your|their|each|every|some|certain|other|many|most|all|which|whose|that)"
    r"\s+states?\b|\bstate\s+(?:laws?|programs?|programmes?|disability|plans?|benefits?|leave"
    r"|insurance|of\s+residence)"
)
_PLACE = re.compile(
    rf"\b(?:{_KINDS})\b|\b{_STATE}\b"
    r"|\b(?:live|lives|living|reside|resides|residing|located|based|resident)\s+(?:in|outside)\b"
    r"|\bresidents?\s+of\b",
    re.I,
)
# "unless statutory guidance differs", "(except where local law requires)", "subject to
# applicable national law": a caveat to the organisation's own rule, up to a bracket or stop.
_CAVEAT = re.compile(
    r"\b(?:unless|except|subject\s+to|where\s+required|as\s+required|otherwise\s+entitled"
    r"|in\s+accordance\s+with|to\s+the\s+extent)\b[^.;)]*",
    re.I,
)
# Case matters here: "US-based" and "the State" are places, "zone-based" and "state the
# reason" are not.
_PROPER = re.compile(r"\b[A-Z][A-Za-z.]*-based\b|(?<=[a-z,;] )State\b")


def own_rules_first(question: str, ranked: Sequence[Ranked], penalty: float) -> list[Ranked]:
    """Return ``ranked`` re-sorted, each rule of a place the question does not name lower.

    Such a unit's score drops by ``penalty``. Applied to what is quoted, after the
    answerability decision has read the ranking as it was: whether the documents
    answer does not depend on whose rule leads.
    """
    if penalty <= 0:
        return list(ranked)
    out = [replace(r, score=r.score - penalty) if _elsewhere(question, r) else r for r in ranked]
    return sorted(out, key=lambda r: -r.score)


def _elsewhere(question: str, ranked: Ranked) -> bool:
    unit = ranked.candidate.unit
    if not is_regional(unit.text, unit.headings):
        return False
    return not asks_about_places(question, " ".join((unit.text, *unit.headings)))


def is_regional(text: str, headings: Sequence[str] = ()) -> bool:
    """Return whether a unit (its text and heading path) speaks of a rule of some place.

    A place named only in a caveat ("... unpaid, unless your local statutory leave
    provides otherwise") leaves the rule the organisation's own.
    """
    return any(_places(_CAVEAT.sub("", part)) for part in (text, *headings))


def asks_about_places(question: str, unit_text: str) -> bool:
    """Return whether ``question`` names a place, or a proper name the unit also uses.

    "I'm based outside the US", "in my country", or "Crimea" when the unit
    says "Crimea": then a regional unit is what is asked for.
    """
    if _places(question):
        return True
    words = WORD.findall(question)
    names = {w for w in words[1:] if w[:1].isupper() and w != "I"}
    return bool(names & set(WORD.findall(unit_text)))


def _places(text: str) -> bool:
    return bool(_PLACE.search(text)) or bool(_PROPER.search(text))
