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
  answer scores no phrase, figure or citation;
- *hedged*: it quotes the closest passage under the offline hedge ("The
  policies may not answer this exactly"); it is scored as an answer.

Unanswerable questions should be refused or hedged (*unanswerable caught*);
answerable ones should be neither.

The *oracle* answerer (`assistant.answering.oracle`) asks the same service with a
perfect loopback model configured and adds, per kind and overall: *reached* (a
gold phrase was in the prompt), *right* (not refused and every reference figure
shown), *intact* (right, among reached), *refused by gate* (answerable, refused
before the model was asked) and *unanswerable flagged*. Questions with a
``follow_up`` are also asked in two turns by the oracle (kind ``follow-up``,
reported apart, not in the overall figures).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from assistant.answering.baseline import baseline_answer
from assistant.answering.citations import MARKER, check_answer
from assistant.answering.model_eval import (
    MODEL_ANSWERERS,
    ModelTrace,
    Scored,
    model_figures,
    model_trace,
)
from assistant.answering.oracle import OracleCase, OracleModel
from assistant.answering.service import Assistant, finish, no_match_message
from assistant.protocols import Embedder, Searcher
from assistant.types import (
    ANONYMOUS,
    Answer,
    EvalQuestion,
    Hit,
    SearchFilters,
    SearchResult,
    Turn,
    User,
)

__all__ = [
    "ANSWERERS",
    "FOLLOW_UP_KIND",
    "METRICS",
    "ORACLE_METRICS",
    "AnswerOutcome",
    "AnswerReport",
    "GivenAnswer",
    "ModelAnswerer",
    "Oracle",
    "OracleTrace",
    "SearchOnce",
    "evaluate_answers",
    "figures_of",
    "normalise_answer",
    "says_not_covered",
    "score_answer",
    "word_count",
]

ANSWERERS = ("assistant", "baseline", "oracle", *MODEL_ANSWERERS)
# (key in figures(), label in the readable report)
METRICS = (
    ("gold_phrase", "gold phrase"),
    ("gold_phrase_top5", "gold phrase | gold section in top 5"),
    ("gold_top5", "gold section in top 5"),
    ("figures", "figures"),
    ("cited_gold_file", "cited gold file"),
    ("median_words", "median words"),
    ("refused_answerable", "refused answerable"),
    ("hedged_answerable", "hedged answerable"),
    ("unanswerable_flagged", "unanswerable flagged"),
    ("unanswerable_caught", "unanswerable flagged or hedged"),
)
# The oracle's own figures (key, label); "unanswerable_flagged" is also in METRICS.
ORACLE_METRICS = (
    ("reached", "reached (gold in the prompt)"),
    ("right", "right (shown, every figure)"),
    ("intact", "intact (right | reached)"),
    ("refused_by_gate", "refused by gate"),
    ("unanswerable_flagged", "unanswerable flagged"),
)
FOLLOW_UP_KIND = "follow-up"
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
_HEDGED = re.compile(r"\bmay not answer this exactly\b")


@dataclass(frozen=True, slots=True)
class GivenAnswer:
    """An answer to score: the text shown, its mode and the files of the sources it cites."""

    text: str
    mode: str
    cited_files: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OracleTrace:
    """What the oracle model saw of one question: the answer in the prompt, any request at all."""

    reached: bool
    asked: bool


@dataclass(frozen=True, slots=True)
class Oracle:
    """The oracle answerer: the answer service with the loopback `OracleModel` as its model."""

    service: Assistant
    model: OracleModel


@dataclass(frozen=True, slots=True)
class ModelAnswerer:
    """A model answerer (`assistant.answering.model_eval`): its service, any oracle behind it."""

    service: Assistant
    oracle: OracleModel | None = None


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
    oracle: OracleTrace | None = None
    model: ModelTrace | None = None
    hedged: bool = False

    @property
    def answerable(self) -> bool:
        """Return whether the question has gold entries."""
        return bool(self.question.gold)

    @property
    def right(self) -> bool:
        """Return whether the answer is shown (not refused) with every reference figure."""
        return self.answerable and not self.refused and not self.missing_figures

    def failures(self) -> tuple[str, ...]:
        """Return the names of the checks this answer failed (none when it passed)."""
        if not self.answerable:
            return () if self.refused or self.hedged else ("not flagged",)
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
        """Return the question kinds present, sorted; two-turn cases last."""
        kinds = {o.question.kind for o in self.outcomes}
        return sorted(kinds - {FOLLOW_UP_KIND}) + sorted(kinds & {FOLLOW_UP_KIND})

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
            out["hedged_answerable"] = _rate(o.hedged for o in answerable)
        if retrieved:
            out["gold_phrase_top5"] = _rate(o.gold_phrase for o in retrieved)
        if with_figures:
            out["figures"] = _rate(not o.missing_figures for o in with_figures)
        unanswerable = [o for o in chosen if not o.answerable]
        if unanswerable:
            out["unanswerable_flagged"] = _rate(o.refused for o in unanswerable)
            out["unanswerable_caught"] = _rate(o.refused or o.hedged for o in unanswerable)
        return out | self.oracle_figures(kind) | self.model_figures(kind)

    def model_figures(self, kind: str | None = None) -> dict[str, float]:
        """Return the figures of `MODEL_METRICS` (empty unless these are model outcomes)."""
        return model_figures(
            [
                Scored(o.answerable, o.refused, o.right, o.model)
                for o in self._chosen(kind)
                if o.model is not None
            ]
        )

    def oracle_figures(self, kind: str | None = None) -> dict[str, float]:
        """Return the figures of `ORACLE_METRICS` (empty unless these are oracle outcomes)."""
        chosen = [o for o in self._chosen(kind) if o.oracle is not None]
        answerable = [o for o in chosen if o.answerable]
        reached = [o for o in answerable if o.oracle and o.oracle.reached]
        unanswerable = [o for o in chosen if not o.answerable]
        out: dict[str, float] = {}
        if answerable:
            out["reached"] = _rate(o.oracle is not None and o.oracle.reached for o in answerable)
            out["right"] = _rate(o.right for o in answerable)
            out["intact"] = _rate(o.right for o in reached)
            out["refused_by_gate"] = _rate(
                o.refused and o.oracle is not None and not o.oracle.asked for o in answerable
            )
        if unanswerable:
            out["unanswerable_flagged"] = _rate(o.refused for o in unanswerable)
        return out

    def misses(self) -> tuple[AnswerOutcome, ...]:
        """Return the outcomes that failed a check, in question order."""
        return tuple(o for o in self.outcomes if o.failures())

    def _chosen(self, kind: str | None) -> list[AnswerOutcome]:
        # Two-turn cases repeat questions of the set: reported apart, not in "all".
        if kind is None:
            return [o for o in self.outcomes if o.question.kind != FOLLOW_UP_KIND]
        return [o for o in self.outcomes if o.question.kind == kind]


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
        hedged=not refused and bool(_HEDGED.search(shown[:_LEAD_CHARS])),
    )


def evaluate_answers(
    service: Assistant,
    questions: Sequence[EvalQuestion],
    *,
    answerers: Sequence[str] = ("assistant",),
    embedder: Embedder | None = None,
    oracle: Oracle | None = None,
    models: Mapping[str, ModelAnswerer] | None = None,
) -> tuple[AnswerReport, ...]:
    """Ask every question once per service and score each answerer's answer.

    Give both services one `SearchOnce` searcher, so that they answer from one
    retrieval run.

    Args:
        service: The assistant (`build_assistant`), as the chat uses it.
        questions: The question set.
        answerers: Any of `ANSWERERS`, in report order.
        embedder: The index's embedding model; needed by the baseline.
        oracle: The oracle answerer; needed by ``oracle``.
        models: The model answerers by name; needed by each of `MODEL_ANSWERERS` asked for.

    Raises:
        ValueError: An unknown answerer, the baseline without an embedder, the
            oracle or a model answerer without its service.
        AssistantError: Retrieval failed (for example, no index).
    """
    unknown = set(answerers) - set(ANSWERERS)
    if (
        unknown
        or ("baseline" in answerers and embedder is None)
        or ("oracle" in answerers and oracle is None)
        or any(a in MODEL_ANSWERERS and a not in (models or {}) for a in answerers)
    ):
        raise ValueError(
            f"answerers {list(answerers)} need one of {ANSWERERS}, the baseline an embedder "
            "and the oracle its service"
        )
    outcomes: dict[str, list[AnswerOutcome]] = {name: [] for name in answerers}
    for question in questions:
        if "assistant" in answerers or "baseline" in answerers:
            for name, outcome in _ask_service(service, question, answerers, embedder).items():
                outcomes[name].append(outcome)
        if oracle is not None and "oracle" in answerers:
            outcomes["oracle"].append(_ask_oracle(oracle, question))
        for name in answerers:
            if models and name in models:
                outcomes[name].append(_ask_model(models[name], question))
    if oracle is not None and "oracle" in answerers:
        by_text = {q.question: q for q in questions}
        outcomes["oracle"] += [
            _ask_oracle_in_two_turns(oracle, q, by_text) for q in questions if q.follow_up
        ]
    return tuple(AnswerReport(name, tuple(outcomes[name])) for name in answerers)


def _ask_service(
    service: Assistant,
    question: EvalQuestion,
    answerers: Sequence[str],
    embedder: Embedder | None,
) -> dict[str, AnswerOutcome]:
    run = service.ask(question.question)
    given: dict[str, GivenAnswer] = {}
    if "assistant" in answerers:
        answer, text = finish(run)
        given["assistant"] = GivenAnswer(text, run.mode, _cited_files(answer))
    else:
        run.close()
    if embedder is not None and "baseline" in answerers:
        given["baseline"] = _baseline(question.question, run.result, embedder=embedder)
    return {
        name: score_answer(question, answer, hits=run.result.hits) for name, answer in given.items()
    }


def _oracle_case(question: EvalQuestion, *, standalone: str = "") -> OracleCase:
    phrases = tuple(g.must_contain for g in question.gold)
    return OracleCase(answer=question.answer, gold_phrases=phrases, standalone=standalone)


def _ask_oracle(
    oracle: Oracle, question: EvalQuestion, history: Sequence[Turn] = (), *, standalone: str = ""
) -> AnswerOutcome:
    oracle.model.ask_next(_oracle_case(question, standalone=standalone))
    run = oracle.service.ask(question.question, history)
    answer, text = finish(run)
    calls = oracle.model.calls
    given = GivenAnswer(text, run.mode, _cited_files(answer))
    outcome = score_answer(question, given, hits=run.result.hits)
    trace = OracleTrace(reached=any(call.reached for call in calls), asked=bool(calls))
    return replace(outcome, oracle=trace)


def _ask_model(answerer: ModelAnswerer, question: EvalQuestion) -> AnswerOutcome:
    if answerer.oracle is not None:
        answerer.oracle.ask_next(_oracle_case(question))
    run = answerer.service.ask(question.question)
    answer, text = finish(run)
    outcome = score_answer(
        question, GivenAnswer(text, run.mode, _cited_files(answer)), hits=run.result.hits
    )
    trace = model_trace(
        question,
        answer,
        refused=outcome.refused,
        right=outcome.right,
        first_token_ms=run.first_token_ms,
        total_ms=run.total_ms,
    )
    return replace(outcome, model=trace)


def _ask_oracle_in_two_turns(
    oracle: Oracle, question: EvalQuestion, by_text: Mapping[str, EvalQuestion]
) -> AnswerOutcome:
    """Ask ``question``'s follow-up after its first turn, as the chat would in one conversation."""
    assert question.follow_up is not None
    first = question.follow_up.after
    earlier = by_text.get(first)
    oracle.model.ask_next(_oracle_case(earlier) if earlier else OracleCase())
    _, shown = finish(oracle.service.ask(first))
    history = (Turn("user", first), Turn("assistant", shown))
    two_turn = replace(
        question,
        id=f"{question.id}-{FOLLOW_UP_KIND}",
        question=question.follow_up.question,
        kind=FOLLOW_UP_KIND,
        follow_up=None,
    )
    # A perfect model rewrites the follow-up into the set's own question.
    return _ask_oracle(oracle, two_turn, history, standalone=question.question)


class SearchOnce:
    """A searcher that asks the real one once per distinct query and replays the result.

    The answerers of one evaluation (the assistant, the baseline, the oracle) then
    answer from one retrieval run instead of searching again each.
    """

    def __init__(self, searcher: Searcher) -> None:
        self.wrapped = searcher
        self._results: dict[tuple[str, int | None, SearchFilters | None, User], SearchResult] = {}

    def search(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        user: User = ANONYMOUS,
    ) -> SearchResult:
        """Return the wrapped searcher's result for these arguments, searched once."""
        key = (question, k, filters, user)
        if key not in self._results:
            self._results[key] = self.wrapped.search(question, k=k, filters=filters, user=user)
        return self._results[key]


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
