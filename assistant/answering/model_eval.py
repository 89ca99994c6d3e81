"""The real-model figures of the answer evaluation: right, cited right, invented, latency.

Each answer of a model answerer (``model``: the configured chat model with its claims
cited by `assistant.answering.claims`; ``model-raw``: the same model, its own markers
only; ``oracle-uncited``: the oracle with its markers dropped, cited by the claims)
gets a `ModelTrace`:

- *right*: answerable, not refused, every reference figure shown;
- *cited right*: right, at least one marker shown, and every shown marker points at a
  source that holds a gold phrase (in the chunk or the section the prompt sent);
- *cites gold*: right and at least one shown marker points at such a source;
- *invented*: not refused, and a sentence shown without the unsupported mark states a
  figure or a name that no source nor the question holds (the lexical checks of
  `assistant.answering.grounding` applied to what the user reads);
- *first token* and *total* milliseconds, from the question to the first and last delta.

Rates: right and refused answerable over answerable questions, cited right and cites
gold over right answers, invented over answers not refused, unanswerable flagged over
unanswerable questions; latencies are medians.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from assistant.answering.citations import MARKER, sentences_of
from assistant.answering.grounding import (
    NO_CITATION_WARNING,
    UNSUPPORTED_MARK,
    Evidence,
    evidence_text,
    why_ungrounded,
)
from assistant.types import Answer, EvalQuestion, Hit

__all__ = [
    "MODEL_ANSWERERS",
    "MODEL_METRICS",
    "ModelTrace",
    "Scored",
    "model_figures",
    "model_trace",
]

MODEL_ANSWERERS = ("model", "model-raw", "oracle-uncited")
# (key, label); the keys are those of the JSON report.
MODEL_METRICS = (
    ("right", "right (shown, every figure)"),
    ("cited_right", "cited right | right"),
    ("cites_gold", "cites gold | right"),
    ("invented", "invented, shown unmarked"),
    ("refused_answerable", "refused answerable"),
    ("unanswerable_flagged", "unanswerable flagged"),
    ("first_token_ms", "first token ms (median)"),
    ("total_ms", "total ms (median)"),
)


@dataclass(frozen=True, slots=True)
class ModelTrace:
    """What a model answerer's answer did (see the module docstring for each check)."""

    cited_right: bool
    cites_gold: bool
    invented: bool
    first_token_ms: float
    total_ms: float


def model_trace(
    question: EvalQuestion,
    answer: Answer,
    *,
    refused: bool,
    right: bool,
    first_token_ms: float,
    total_ms: float,
) -> ModelTrace:
    """Return the trace of one answer; ``right`` and ``refused`` as the outcome scored them."""
    gold = [_holds_gold(c.hit, question) for c in answer.citations]
    return ModelTrace(
        cited_right=right and bool(gold) and all(gold),
        cites_gold=right and any(gold),
        invented=not refused and _invents(question.question, answer),
        first_token_ms=first_token_ms,
        total_ms=total_ms,
    )


def _holds_gold(hit: Hit, question: EvalQuestion) -> bool:
    phrases = [_folded(g.must_contain) for g in question.gold if g.must_contain.strip()]
    text = _folded(f"{hit.chunk.text} {hit.section_text}")
    return any(phrase in text for phrase in phrases)


def _invents(question: str, answer: Answer) -> bool:
    evidence = Evidence.of(f"{evidence_text(answer.sources)} {question}")
    # What the check flagged is shown marked or withheld: not shown as a fact.
    flagged = set(answer.unsupported_sentences)
    shown = answer.text.replace(UNSUPPORTED_MARK, "").replace(NO_CITATION_WARNING, "")
    for sentence in sentences_of(shown):
        if sentence in flagged or sentence.startswith("*(One statement"):
            continue
        if why_ungrounded(MARKER.sub(" ", sentence), evidence):
            return True
    return False


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass(frozen=True, slots=True)
class Scored:
    """What the rates need of one outcome: as the evaluation scored it, and its trace."""

    answerable: bool
    refused: bool
    right: bool
    trace: ModelTrace


def model_figures(outcomes: Sequence[Scored]) -> dict[str, float]:
    """Return the rates of `MODEL_METRICS` over ``outcomes`` (a rate over nothing is absent)."""
    answerable = [o for o in outcomes if o.answerable]
    right = [o for o in answerable if o.right]
    answered = [o for o in outcomes if not o.refused]
    unanswerable = [o for o in outcomes if not o.answerable]
    out: dict[str, float] = {}
    if answerable:
        out["right"] = _rate(o.right for o in answerable)
        out["refused_answerable"] = _rate(o.refused for o in answerable)
    if right:
        out["cited_right"] = _rate(o.trace.cited_right for o in right)
        out["cites_gold"] = _rate(o.trace.cites_gold for o in right)
    if answered:
        out["invented"] = _rate(o.trace.invented for o in answered)
    if unanswerable:
        out["unanswerable_flagged"] = _rate(o.refused for o in unanswerable)
    timed = [o.trace for o in outcomes if o.trace.total_ms]
    if timed:
        firsts = [t.first_token_ms for t in timed if t.first_token_ms]
        out["first_token_ms"] = float(statistics.median(firsts)) if firsts else 0.0
        out["total_ms"] = float(statistics.median(t.total_ms for t in timed))
    return out


def _rate(flags: Iterable[bool]) -> float:
    values = list(flags)
    return sum(values) / len(values) if values else 0.0
