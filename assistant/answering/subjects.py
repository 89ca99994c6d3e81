"""Which words of the previous question a short follow-up stands in for, and gibberish.

"and for Kisumu?" after "What is the per diem for an overnight trip to Mombasa?"
replaces "Mombasa": the follow-up keeps the previous question's frame (the per diem
for an overnight trip) and brings its own subject. The slot it fills is found from
the shape of both, without reading their meaning:

1. a name (a capitalised word) replaces the names of the previous question
   ("Kisumu" for "Mombasa", "Sundays" for "Saturdays");
2. a follow-up opening with a determiner or a preposition ("and my phone?", "and
   for a bank transfer?") replaces the phrase after the same word ("my laptop",
   "for a mobile money withdrawal");
3. one bare word ("what about maternity?") replaces the modifier of the previous
   question's compound ("sick" of "sick leave").

Anything else adds to the previous topic ("what about for interns?" keeps maternity).
"""

from __future__ import annotations

import re

from assistant.answering.asking import ASKING_WORDS
from assistant.words import STOPWORDS, content_words

__all__ = ["gibberish", "replaced_slot"]

_TOKEN = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*", re.UNICODE)
_DETERMINERS = frozenset({"a", "an", "the", "my", "your", "our", "their", "his", "her", "this"})
_PREPOSITIONS = frozenset(
    {"for", "in", "to", "at", "on", "with", "of", "from", "during", "under", "over", "by"}
)
# A phrase after a lead-in that stands for a subject ("a bank transfer") is this short.
_PHRASE_WORDS = 2
_VOWELS = re.compile(r"[aeiouy]")
_CONSONANT_RUN = re.compile(r"[b-df-hj-np-tv-xz]{4,}")
_BAD_Q = re.compile(r"q(?!u)")
_REPEATED = re.compile(r"(.)\1\1")


def replaced_slot(follow_up: str, previous: str, *, short: bool) -> frozenset[str]:
    """Return the words (lowercase) of ``previous`` that ``follow_up`` replaces; none to add.

    ``follow_up`` is the follow-up without its opening ("for Kisumu"); ``short`` says
    it is short enough to stand for a subject at all.
    """
    tokens = _TOKEN.findall(follow_up)
    if not short or not tokens:
        return frozenset()
    lead = [t.lower() for t in tokens[:2] if t.lower() in _PREPOSITIONS | _DETERMINERS]
    own = [t for t in tokens[len(lead) :] if _topic(t)]
    if not own:
        return frozenset()
    words = _TOKEN.findall(previous)
    names = _names(words)
    if any(_is_name(t) for t in own) and names:
        return frozenset(names)
    if lead and len(own) == len(tokens) - len(lead) <= _PHRASE_WORDS:
        # "for a bank transfer", not "for members under 6 months" (a qualifier).
        return _after(words, lead)
    if len(tokens) == 1:
        return _modifier(words)
    return frozenset()


def gibberish(text: str) -> bool:
    """Return whether most words of ``text`` that carry a topic are no words at all."""
    words = [t for t in _TOKEN.findall(text) if _topic(t) and not t.isdigit()]
    if not words:
        return False
    odd = [w for w in words if _odd(w)]
    return len(odd) * 2 > len(words)


def _odd(word: str) -> bool:
    if word.isupper() and len(word) <= 5:
        return False  # an acronym: SSH, ICT, KES
    lower = word.lower()
    return bool(
        not _VOWELS.search(lower)
        or _CONSONANT_RUN.search(lower)
        or _BAD_Q.search(lower)
        or _REPEATED.search(lower)
    )


def _topic(token: str) -> bool:
    lower = token.lower()
    return lower not in STOPWORDS and bool(content_words(lower) - ASKING_WORDS)


def _is_name(token: str) -> bool:
    return token[:1].isupper() and not token.isupper()


def _names(words: list[str]) -> list[str]:
    # The first word is capitalised as the question's start, not as a name.
    return [w.lower() for w in words[1:] if _is_name(w) and _topic(w)]


def _after(words: list[str], lead: list[str]) -> frozenset[str]:
    """Return the topic run after the last place ``previous`` has the follow-up's lead-in."""
    lower = [w.lower() for w in words]
    width = len(lead)
    for start in range(len(lower) - width, -1, -1):
        if lower[start : start + width] == lead or lower[start] == lead[0]:
            return frozenset(_run(lower, _skip_lead(lower, start)))
    return frozenset()


def _skip_lead(lower: list[str], start: int) -> int:
    index = start
    while index < len(lower) and lower[index] in _PREPOSITIONS | _DETERMINERS:
        index += 1
    return index


def _run(lower: list[str], start: int) -> list[str]:
    run: list[str] = []
    for word in lower[start:]:
        if not _topic(word):
            break
        run.append(word)
    return run


def _modifier(words: list[str]) -> frozenset[str]:
    """Return the modifier of the previous question's first two-word compound ("sick leave").

    A longer run of topic words ("report fraud anonymously") is no compound: nothing goes.
    """
    lower = [w.lower() for w in words]
    index = 0
    while index < len(lower):
        run = _run(lower, index)
        if len(run) == 2:
            return frozenset(run[:1])
        index += max(len(run), 1)
    return frozenset()
