"""Turn a follow-up question into a standalone search query, only when needed.

"And for members under 6 months?" cannot be searched on its own. When a
question looks like a follow-up (it starts with "and"/"what about", leans on
a pronoun, or is very short) and there is an earlier user turn, it is
rewritten: by a short non-streamed completion when a model is configured,
otherwise by combining the previous question's content words with the
follow-up. The previous question is itself resolved first, so a chain of
fragments ("and for development loans?", then "what about for members under
6 months?") keeps the topic of the last self-contained question.
Self-contained questions pass through unchanged.

A short follow-up gets its own subject: it keeps only the frame of the previous
question and replaces the part it stands for (`subjects`): "and for Kisumu?" after
"the per diem for an overnight trip to Mombasa" searches the Kisumu per diem, "what
about maternity?" after "days of sick leave" searches maternity leave. A previous
question of gibberish carries nothing over ("leave" after "asdkj qwpoe" is "leave").
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from assistant.answering.asking import ASKING_WORDS
from assistant.answering.subjects import gibberish, replaced_slot
from assistant.errors import LLMError
from assistant.types import Turn
from assistant.words import STOPWORDS, content_words

__all__ = ["Completer", "QueryRewriter", "Rewrite", "needs_rewrite"]

logger = logging.getLogger(__name__)

_FOLLOW_UP_START = re.compile(
    r"^\s*(?:and|or|but|also|then|so|what about|how about|what if|same|ok|okay)\b", re.I
)
# Words that point back at something said before. "they", "their", "there" and
# "one" are left out: they usually point inside the question itself ("Can staff
# bring their dogs?", "Is there a gym?").
_PRONOUN = re.compile(
    r"\b(?:it|its|that|this|these|those|them|same|above|former|latter)\b",
    re.I,
)
# "that" introducing a clause ("the rule that applies") points nowhere.
_CLAUSE_THAT = re.compile(
    r"\b(?:so|such|now|given|provided)\s+that\b|\bthat\s+(?:i|we|you|my|our|the|a|an)\b", re.I
)
_WORD = re.compile(r"[^\W_]+(?:-[^\W_]+)*", re.UNICODE)
_SHORT = 2
# "Does it roll over?", "Do they keep vesting?", "How much does it cost?": the
# question's subject is something said before.
_SUBJECT_POINTS_BACK = re.compile(
    r"^\s*(?:(?:what|which|who|when|where|why|how)(?:\s+(?:much|many|long|often|soon))?\s+)?"
    r"(?:is|are|was|were|do|does|did|can|could|will|would|should|shall|must|has|have)\s+"
    r"(?:it|they|these|those|this|that)\b",
    re.I,
)
_QUESTION_START = re.compile(
    r"^\s*(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|"
    r"could|may|might|will|would|should|shall|must|has|have|am)\b",
    re.I,
)
# A question that points back ("Is that allowed for contractors?") is a follow-up
# unless it names more than this many content words of its own.
_POINTING = 2
_MAX_QUERY_CHARS = 300
# A follow-up of at most this many keywords ("and for an emergency loan?") may replace
# the previous question's subject; a longer one adds to it.
_SUBJECT_WORDS = 3

REWRITE_INSTRUCTIONS = (
    "Rewrite the user's last message as one standalone search query about the "
    "organisation's policy documents, using the earlier conversation only to resolve "
    "what it refers to. Reply with the query only, no quotes, no explanation."
)


@runtime_checkable
class Completer(Protocol):
    """A model that returns a short non-streamed completion."""

    def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int = 96) -> str:
        """Return the model's reply to ``messages``."""
        ...


@dataclass(frozen=True, slots=True)
class Rewrite:
    """The query to search and how it was obtained."""

    query: str
    method: Literal["none", "heuristic", "llm"]
    # What a follow-up adds to the earlier topic, as typed ("interns" of "what
    # about for interns?"): a passage that answers it must name it.
    added: tuple[str, ...] = ()

    @property
    def rewritten(self) -> bool:
        """Return whether the query differs from the question."""
        return self.method != "none"


def needs_rewrite(question: str, history: Sequence[Turn]) -> bool:
    """Return whether ``question`` reads as a follow-up to an earlier user turn.

    A follow-up opens like one ("and ...", "what about ..."), is too short to
    name a topic ("Part-time?"), or points back ("Does it apply to interns?")
    while naming little of its own. A question that names its own topic
    ("Can staff bring their dogs to the office?") stands on its own and is
    never merged with the previous turn.
    """
    if not any(turn.role == "user" for turn in history):
        return False
    if _FOLLOW_UP_START.match(question) or _SUBJECT_POINTS_BACK.match(question):
        return True
    own = len(_topic_words(question))
    points_back = bool(_PRONOUN.search(_CLAUSE_THAT.sub(" ", question)))
    if points_back:
        return own <= _POINTING
    if _QUESTION_START.match(question):
        # A whole question ("Is there a gym subsidy?") names its topic if it has one.
        return own == 0
    return len(_keywords(question)) <= _SHORT


class QueryRewriter:
    """Rewrites follow-ups, with ``completer`` when given, else heuristically."""

    def __init__(self, *, completer: Completer | None = None) -> None:
        self._completer = completer

    def rewrite(self, question: str, history: Sequence[Turn]) -> Rewrite:
        """Return the standalone query for ``question`` given the earlier turns."""
        if not needs_rewrite(question, history):
            return Rewrite(question, "none")
        if gibberish(_topic(history)):
            # Nothing to carry over: words that mean nothing would only mislead the search.
            return Rewrite(question, "none")
        added = _added(question, _topic(history))
        if self._completer is not None:
            query = self._with_model(question, history)
            if query:
                return Rewrite(query, "llm", added)
        return Rewrite(_heuristic(question, history), "heuristic", added)

    def _with_model(self, question: str, history: Sequence[Turn]) -> str:
        assert self._completer is not None
        messages = [{"role": "system", "content": REWRITE_INSTRUCTIONS}]
        messages += [{"role": t.role, "content": t.text[:1000]} for t in history[-4:]]
        messages.append({"role": "user", "content": question})
        try:
            reply = self._completer.complete(messages, max_tokens=64)
        except LLMError as exc:
            logger.warning("query rewrite failed, using the heuristic: %s", exc)
            return ""
        query = " ".join(reply.split()).strip("\"'` ")
        return query if 0 < len(query) <= _MAX_QUERY_CHARS else ""


def _heuristic(question: str, history: Sequence[Turn]) -> str:
    return _combine(question, _topic(history))


def _topic(history: Sequence[Turn]) -> str:
    """Return the previous user question, itself made standalone against the ones before."""
    asked = [turn.text for turn in history if turn.role == "user"]
    topic = asked[0]
    for index, text in enumerate(asked[1:], start=1):
        earlier = [Turn("user", t) for t in asked[:index]]
        follows = needs_rewrite(text, earlier) and not gibberish(topic)
        topic = _combine(text, topic) if follows else text
    return topic


def _combine(question: str, previous: str) -> str:
    core = _strip_opening(question)
    replaced = content_words(core)
    # The words of the previous question the follow-up stands in for ("Mombasa").
    slot = replaced_slot(core, previous, short=len(_keywords(core)) <= _SUBJECT_WORDS)
    context: list[str] = []
    last_kept = -2
    kept = [w for w in _keywords(previous) if w.lower() not in slot]
    for index, word in enumerate(dict.fromkeys(kept)):
        if content_words(word) <= replaced:
            # The follow-up names this thing anew ("development loans" after
            # "emergency loan"), so the modifier just before it goes too.
            if context and last_kept == index - 1:
                context.pop()
            continue
        context.append(word)
        last_kept = index
    return " ".join([*context, core]).strip()


def _strip_opening(question: str) -> str:
    """Remove every follow-up opening: "and what about for X?" -> "for X"."""
    core = question.strip(" ,?!.")
    while True:
        shorter = _FOLLOW_UP_START.sub("", core, count=1).strip(" ,?!.")
        if shorter == core or not shorter:
            return core
        core = shorter


def _added(question: str, previous: str) -> tuple[str, ...]:
    """Return the follow-up's own topic words that the earlier topic lacks, as typed."""
    earlier = content_words(previous)
    return tuple(
        dict.fromkeys(
            w
            for w in _keywords(_strip_opening(question))
            if _topic_words(w) and not _topic_words(w) <= earlier
        )
    )


def _topic_words(text: str) -> set[str]:
    """Return what a question is about: its content words minus the asking words."""
    return content_words(text) - ASKING_WORDS


def _keywords(text: str) -> list[str]:
    return [w for w in _WORD.findall(text) if w.lower() not in STOPWORDS]
