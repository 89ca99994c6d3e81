"""Word helpers shared by the stages: content words, stopwords, quoted word lists, valid text."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["STOPWORDS", "content_words", "is_valid_unicode", "quoted_list", "valid_unicode"]

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


def content_words(text: str) -> set[str]:
    """Return the lower-cased, crudely stemmed words of ``text`` minus stopwords."""
    words = (w.lower() for w in WORD.findall(text))
    return {_stem(w) for w in words if w not in STOPWORDS and not w.isdigit()}


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
