"""Word helpers shared by the stages: content words, stopwords, sentences, valid text."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

import lemminflect

__all__ = [
    "STOPWORDS",
    "compound_words",
    "content_words",
    "is_valid_unicode",
    "quoted_list",
    "sentence_breaks",
    "split_sentences",
    "topic_words",
    "valid_unicode",
]

# A word: letters and digits, no underscores; every stage splits text into words with it.
WORD = re.compile(r"[^\W_]+", re.UNICODE)

_STOPWORD_TEXT = """a about above after again all also am an and any are as at be because been
    before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers him his how i if in into is it its
    itself just may me might more most must my no nor not now of off on once only or other
    our out over own same shall she should so some such than that the their them then there
    these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours per"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

# Words that are never the topic of a question, whatever a dictionary says they
# may be: pronouns, fillers, time words, verbs of thinking and feeling, degree words.
# A refusal that names them ("none of the sections mentions “okay” or “next”")
# explains nothing.
_NOT_TOPIC_TEXT = """
    i me my mine myself we us our ours ourselves you your yours yourself he him his she her
    they them their theirs it its one ones someone somebody something anything everything
    nothing anyone everyone nobody anybody somewhere anywhere everywhere nowhere
    okay ok alright yeah yes yep hey hi hello thanks thank please sorry stuff thing things
    ugh hmm um uh oh wow lol omg pls plz thx ah eh
    kind sort bit lot lots couple bunch way ways case cases deal matter point fact idea
    really actually basically honestly literally probably maybe perhaps hopefully just
    pretty quite rather fairly super totally kinda sorta gonna wanna gotta
    today tonight tomorrow yesterday now later soon recently lately currently next last
    week weeks weekend month months year years day days night nights morning evening
    afternoon time times moment while ago ever never always sometimes often usually
    think thinking thought wonder wondering guess suppose believe feel feeling felt hope
    hoping wish want wanting wanted know knowing knew like liking mean sure unsure worried
    worry okay fine good bad great nice new old big small little much many more most less
    least other another same different whole certain able
"""
_NOT_TOPICS = frozenset(_NOT_TOPIC_TEXT.split())
_NOUN_TAGS = frozenset({"NOUN", "PROPN"})

# Names written with a digit and a joint: "401(k)", "83(b)", "W-2", "I-9", "K-1",
# "COVID-19", "24/7", "1:1". Split at the joint they are a number and a letter, and
# a number is no content word; whole they name a thing. A number followed by a
# word ("30-day", "12-weeks") is a quantity, and times, dates and ranges ("9:30",
# "1/5/2024", "2024-25") stay numbers: only the forms below count.
_COMPOUND = re.compile(
    r"(?<![\w(/:-])(?:"
    r"\d{1,4}\([a-z]\)"  # 401(k), 83(b)
    r"|[a-z]{1,5}-\d{1,4}[a-z]?"  # W-2, I-9, K-1, COVID-19, H-1B
    r"|\d{1,2}[/:]\d"  # 24/7, 1:1
    r")(?![\w(/:-]*\w)",
    re.IGNORECASE,
)
_JOINTS = re.compile(r"[()\-]")
_COMPOUND_HINT = re.compile(r"\d[(/:]|-\d")

# After these a full stop never ends a sentence.
_ABBREVIATIONS = frozenset(
    (
        *("e.g", "i.e", "mr", "mrs", "ms", "dr", "no", "nos", "vs", "cf", "viz", "st", "jr"),
        *("sr", "approx", "art", "sec", "fig", "p", "pp", "para", "u.s", "u.k", "u.n", "e.u"),
        *("a.m", "p.m", "ph.d", "incl", "esp", "dept", "est", "min", "max", "ref", "vol"),
        *("ch", "cl"),
    )
)
_SENTENCE_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c\u2018(\[]?[A-Z0-9])")
# Text written all in lower case (some filings, chat logs) starts its sentences in lower case.
_LOOSE_SENTENCE_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*\s+(?=\S)")


def content_words(text: str) -> set[str]:
    """Return the lower-cased, crudely stemmed words of ``text`` minus stopwords."""
    words = (w.lower() for w in WORD.findall(text))
    found = {_stem(w) for w in words if w not in STOPWORDS and not w.isdigit()}
    return found | set(compound_words(text)) if _COMPOUND_HINT.search(text) else found


def compound_words(text: str) -> list[str]:
    """Return the names of ``text`` written with a digit and a joint, as one word each.

    "401(k)" and "401k" are both ``401k``, "W-2" and "W2" both ``w2``; "24/7" and
    "1:1" keep their joint (without it they would read as another number).
    """
    return [_JOINTS.sub("", m.group().lower()) for m in _COMPOUND.finditer(text)]


def sentence_breaks(text: str, *, loose: bool = False) -> list[tuple[int, int]]:
    """Return ``(end, next_start)`` of every sentence boundary in ``text``.

    A sentence ends at ``.``, ``!`` or ``?`` (and any closing quotes or brackets)
    followed by white space and a capital, digit or opening quote; with
    ``loose``, followed by white space and anything. A full stop after a known
    abbreviation or a single letter ("J. Smith") never ends one, and neither
    does one inside a URL or a decimal ("12.5"): no white space follows it.

    Args:
        text: Prose.
        loose: Also accept a sentence that starts in lower case.

    Returns:
        For each boundary, where the sentence ends (after its punctuation) and
        where the next one starts (after the white space), in order.
    """
    pattern = _LOOSE_SENTENCE_END if loose else _SENTENCE_END
    breaks = []
    for match in pattern.finditer(text):
        if match.group().startswith(".") and _before_is_abbreviation(text, match.start()):
            continue
        breaks.append((match.start() + len(match.group().rstrip()), match.end()))
    return breaks


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences, never inside URLs, decimals, abbreviations or initials.

    A sentence ends at ``.``, ``!`` or ``?`` followed by white space and a
    capital, digit or opening quote; a full stop after a known abbreviation
    or a single letter ("J. Smith") does not end one.
    """
    sentences: list[str] = []
    start = 0
    for end, next_start in sentence_breaks(text):
        sentences.append(text[start:end])
        start = next_start
    sentences.append(text[start:])
    return [s.strip() for s in sentences if s.strip()]


def _before_is_abbreviation(text: str, dot: int) -> bool:
    # Only the word before the dot matters; a bounded look-back keeps long texts linear.
    word = re.search(r"([\w.]+)$", text[max(0, dot - 64) : dot])
    if word is None:
        return False
    token = word.group(1).lower().strip(".")
    if len(token) == 1 and token.isalpha():
        return True  # an initial or a list letter
    return token in _ABBREVIATIONS


def topic_words(words: Sequence[str]) -> tuple[str, ...]:
    """Return the words of ``words`` that can name a topic, in order.

    A refusal may say which of the question's words no document uses, but only
    content nouns or words a dictionary does not know ("sabbatical", "crypto",
    "401k"): never a pronoun, contraction ("I'll"), filler ("okay", "stuff"),
    time word ("next"), verb of thinking ("thinking") or other word that cannot
    be a noun ("somewhere").
    """
    return tuple(word for word in words if _is_topic(word))


@functools.lru_cache(maxsize=8192)
def _is_topic(word: str) -> bool:
    lower = word.lower().replace("\u2019", "'")
    if lower.endswith("'s"):
        lower = lower[:-2]
    if not lower or "'" in lower or lower in STOPWORDS or lower in _NOT_TOPICS:
        return False
    if not any(c.isalpha() for c in lower):
        return False
    if _COMPOUND_HINT.search(word) or any(c.isdigit() for c in lower):
        return True  # "401(k)", "W-2": names
    tags = lemminflect.getAllLemmas(lower)
    return not tags or bool(_NOUN_TAGS & set(tags))


def quoted_list(words: Sequence[str]) -> str:
    """Return ``“a”``, ``“a” or “b”``, ``“a”, “b” or “c”``."""
    quoted = [f"“{w}”" for w in words]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def valid_unicode(text: str) -> str:
    r"""Return ``text`` with surrogate pairs joined and lone surrogates replaced by U+FFFD.

    JSON escapes (``"\ud800"``) and undecodable command-line bytes (surrogateescape)
    give strings that no tokenizer, UTF-8 stream or browser accepts.
    """
    if is_valid_unicode(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def is_valid_unicode(text: str) -> bool:
    """Return whether ``text`` holds no surrogate code point (so it encodes as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _stem(word: str) -> str:
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word
