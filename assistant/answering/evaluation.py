"""Answer-level evaluation: does the answer a user reads state the fact?

Each question is asked once through the assistant (the same service the chat
uses); the baseline (`assistant.answering.baseline`) can answer from the same
retrieval. An answer is scored on what it shows, after citation markers and
Markdown (emphasis, links, code, headings, table pipes) are stripped and case
and whitespace folded:

- *gold phrase*: it contains the ``must_contain`` phrase of a gold entry;
- *figures*: every figure (number, amount, percentage, date) of the question's
  reference ``answer`` appears in it, "1,000" and "1000" alike (questions whose
  reference states no figure are left out of this rate);
- *cited gold file*: a source it cites is a gold entry's file;
- *words*: its length in words;
- *refused*: it says the documents do not cover the question (mode
  ``no good match``, or a not-covered statement at its start). A refused
  answer scores no phrase, figure or citation.

Unanswerable questions should be refused; answerable ones should not.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from assistant.answering.baseline import baseline_answer
from assistant.answering.citations import MARKER, check_answer
from assistant.answering.service import Assistant, finish, no_match_message
from assistant.protocols import Embedder
from assistant.types import Answer, EvalQuestion, Hit, SearchResult

__all__ = [
    "ANSWERERS",
    "METRICS",
    "AnswerOutcome",
    "AnswerReport",
    "GivenAnswer",
    "evaluate_answers",
    "figures_of",
    "normalise_answer",
    "says_not_covered",
    "score_answer",
    "word_count",
]

ANSWERERS = ("assistant", "baseline")
# (key in figures(), label in the readable report)
METRICS = (
    ("gold_phrase", "gold phrase"),
    ("gold_phrase_top5", "gold phrase | gold section in top 5"),
    ("gold_top5", "gold section in top 5"),
    ("figures", "figures"),
    ("cited_gold_file", "cited gold file"),
    ("median_words", "median words"),
    ("refused_answerable", "refused answerable"),
    ("unanswerable_flagged", "unanswerable flagged"),
)
TOP_SECTIONS = 5

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+", re.M)
# "*", "`" and table pipes anywhere; "_" only at a word's edge, so snake_case survives.
_EMPHASIS = re.compile(r"[*`|]+|(?<![^\W_])_+|_+(?![^\W_])")
_ESCAPE = re.compile(r"\\([\\`*_\[\]()#!|~>+\-.{}])")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})
_WORD = re.compile(r"[^\W_]+(?:['.,-][^\W_]+)*")
_FIGURE = re.compile(
    r"(?<![\w.,:])(\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?![\d,:]\d)"
    r"(\s*(?:%|per\s?cent\b))?"
)
# The opening of a "the documents do not cover this" statement (the service's
# no-match text, the offline "no passage matches" note, a model following the
# prompt's rule 3). Only the answer's start is read: a quoted policy sentence
# later on may well say "this policy does not cover contractors".
_NOT_COVERED = re.compile(
    r"\b(?:documents?|sources?|policies|sections?|passages?|context)\b[^.\n]{0,40}?"
    r"\b(?:do|does|did)(?:\s+not|n't)\s+(?:appear\s+to\s+|seem\s+to\s+)?"
    r"(?:cover|address|answer|mention|say|state|specify|include|contain|discuss|provide)\b"
    r"|\bnot\s+covered\s+(?:by|in)\b|\bno\s+passage\b|\bno\s+information\b"
)
_LEAD_CHARS = 300


@dataclass(frozen=True, slots=True)
class GivenAnswer:
    """An answer to score: the text shown, its mode and the files of the sources it cites."""

    text: str
    mode: str
    cited_files: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AnswerOutcome:
    """How one answer did on one question (see the module docstring for each check)."""

    question: EvalQuestion
    mode: str
    answer: str
    gold_phrase: bool
    reference_figures: tuple[str, ...]
    missing_figures: tuple[str, ...]
    cited_gold_file: bool
    words: int
    refused: bool
    gold_top5: bool

    @property
    def answerable(self) -> bool:
        """Return whether the question has gold entries."""
        return bool(self.question.gold)

    def failures(self) -> tuple[str, ...]:
        """Return the names of the checks this answer failed (none when it passed)."""
        if not self.answerable:
            return () if self.refused else ("not flagged",)
        failed = [
            name
            for name, ok in (
                ("refused", not self.refused),
                ("gold phrase", self.gold_phrase),
                ("figures", not self.missing_figures),
                ("cited gold file", self.cited_gold_file),
            )
            if not ok
        ]
        return tuple(failed)


@dataclass(frozen=True, slots=True)
class AnswerReport:
    """The outcomes of one answerer over a question set."""

    answerer: str
    outcomes: tuple[AnswerOutcome, ...]

    def kinds(self) -> list[str]:
        """Return the question kinds present, sorted."""
        return sorted({o.question.kind for o in self.outcomes})

    def counts(self, kind: str | None = None) -> dict[str, int]:
        """Return how many questions each rate is over (one kind, or all)."""
        chosen = self._chosen(kind)
        answerable = [o for o in chosen if o.answerable]
        return {
            "answerable": len(answerable),
            "unanswerable": len(chosen) - len(answerable),
            "with_figures": sum(bool(o.reference_figures) for o in answerable),
            "gold_top5": sum(o.gold_top5 for o in answerable),
        }

    def figures(self, kind: str | None = None) -> dict[str, float]:
        """Return the rates of `METRICS` (over one kind, or all); a rate over nothing is absent."""
        chosen = self._chosen(kind)
        answerable = [o for o in chosen if o.answerable]
        retrieved = [o for o in answerable if o.gold_top5]
        with_figures = [o for o in answerable if o.reference_figures]
        out: dict[str, float] = {}
        if answerable:
            out["gold_phrase"] = _rate(o.gold_phrase for o in answerable)
            out["gold_top5"] = _rate(o.gold_top5 for o in answerable)
            out["cited_gold_file"] = _rate(o.cited_gold_file for o in answerable)
            out["median_words"] = float(statistics.median(o.words for o in answerable))
            out["refused_answerable"] = _rate(o.refused for o in answerable)
        if retrieved:
            out["gold_phrase_top5"] = _rate(o.gold_phrase for o in retrieved)
        if with_figures:
            out["figures"] = _rate(not o.missing_figures for o in with_figures)
        unanswerable = [o for o in chosen if not o.answerable]
        if unanswerable:
            out["unanswerable_flagged"] = _rate(o.refused for o in unanswerable)
        return out

    def misses(self) -> tuple[AnswerOutcome, ...]:
        """Return the outcomes that failed a check, in question order."""
        return tuple(o for o in self.outcomes if o.failures())

    def _chosen(self, kind: str | None) -> list[AnswerOutcome]:
        return [o for o in self.outcomes if kind is None or o.question.kind == kind]


def _rate(flags: Iterable[bool]) -> float:
    values = list(flags)
    return sum(values) / len(values) if values else 0.0


def normalise_answer(text: str) -> str:
    """Return ``text`` without citation markers and Markdown, case and whitespace folded."""
    text = _LINK.sub(r"\1", text.translate(_QUOTES))
    text = MARKER.sub(" ", text)
    text = _HEADING.sub("", text)
    text = _ESCAPE.sub(r"\1", text)
    text = _EMPHASIS.sub(" ", text)
    return " ".join(text.split()).casefold()


def figures_of(text: str) -> tuple[str, ...]:
    """Return the figures of ``text`` (normalised, in order, once each): "1,000" is "1000".

    A percentage keeps its sign ("12%", also for "12 percent"); ISO dates and times
    ("8:00") stay whole.
    """
    found: list[str] = []
    for match in _FIGURE.finditer(normalise_answer(text)):
        value = match[1].replace(",", "")
        value += "%" if match[2] else ""
        if value not in found:
            found.append(value)
    return tuple(found)


def word_count(text: str) -> int:
    """Return the number of words of ``text`` as shown, markers and Markdown aside."""
    return len(_WORD.findall(normalise_answer(text)))


def says_not_covered(text: str, *, mode: str) -> bool:
    """Return whether the answer says the documents do not cover the question."""
    return mode == "no good match" or bool(
        _NOT_COVERED.search(normalise_answer(text)[:_LEAD_CHARS])
    )


def score_answer(
    question: EvalQuestion, given: GivenAnswer, *, hits: Sequence[Hit]
) -> AnswerOutcome:
    """Score one answer to ``question``; ``hits`` is what retrieval returned for it."""
    shown = normalise_answer(given.text)
    refused = says_not_covered(given.text, mode=given.mode)
    reference = figures_of(question.answer)
    present = set(figures_of(given.text))
    gold_files = {g.file for g in question.gold}
    return AnswerOutcome(
        question=question,
        mode=given.mode,
        answer=given.text,
        gold_phrase=not refused
        and any(normalise_answer(g.must_contain) in shown for g in question.gold),
        reference_figures=reference,
        missing_figures=reference if refused else tuple(f for f in reference if f not in present),
        cited_gold_file=not refused and bool(gold_files & set(given.cited_files)),
        words=word_count(given.text),
        refused=refused,
        gold_top5=any(g.found_in(h) for g in question.gold for h in hits[:TOP_SECTIONS]),
    )


def evaluate_answers(
    service: Assistant,
    questions: Sequence[EvalQuestion],
    *,
    answerers: Sequence[str] = ("assistant",),
    embedder: Embedder | None = None,
) -> tuple[AnswerReport, ...]:
    """Ask every question once and score each answerer's answer from that one retrieval.

    Args:
        service: The assistant (`build_assistant`), as the chat uses it.
        questions: The question set.
        answerers: Any of `ANSWERERS`, in report order.
        embedder: The index's embedding model; needed by the baseline.

    Raises:
        ValueError: An unknown answerer, or the baseline without an embedder.
        AssistantError: Retrieval failed (for example, no index).
    """
    unknown = set(answerers) - set(ANSWERERS)
    if unknown or ("baseline" in answerers and embedder is None):
        raise ValueError(f"answerers {list(answerers)} need one of {ANSWERERS} and an embedder")
    outcomes: dict[str, list[AnswerOutcome]] = {name: [] for name in answerers}
    for question in questions:
        run = service.ask(question.question)
        given: dict[str, GivenAnswer] = {}
        if "assistant" in answerers:
            answer, text = finish(run)
            given["assistant"] = GivenAnswer(text, run.mode, _cited_files(answer))
        else:
            run.close()
        if embedder is not None and "baseline" in answerers:
            given["baseline"] = _baseline(question.question, run.result, embedder=embedder)
        for name in answerers:
            outcomes[name].append(score_answer(question, given[name], hits=run.result.hits))
    return tuple(AnswerReport(name, tuple(outcomes[name])) for name in answerers)


def _cited_files(answer: Answer) -> tuple[str, ...]:
    return tuple(c.hit.chunk.source for c in answer.citations)


def _baseline(question: str, result: SearchResult, *, embedder: Embedder) -> GivenAnswer:
    # Same retrieval, same verdict: on "no good match" the baseline refuses as the service does.
    if result.no_good_match or not result.hits:
        text = no_match_message(result.hits, reason=result.no_match_reason)
        return GivenAnswer(text, "no good match", ())
    hits = result.hits[:TOP_SECTIONS]
    answer = check_answer(
        question, baseline_answer(question, hits, embedder=embedder), hits, offline=True
    )
    return GivenAnswer(answer.text, "extractive", _cited_files(answer))
