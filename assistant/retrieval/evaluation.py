"""Retrieval evaluation against a JSONL question set with gold sections.

Each line is ``{"id", "question", "kind", "gold": [{"file", "heading_path",
"must_contain"}], "answer"}``; an empty ``gold`` marks an unanswerable question
and ``answer``, an optional reference answer, is read only by the answer-level
evaluation (`assistant.answering.evaluation`). A gold entry is *found* at rank r
when the r-th hit comes from ``file`` (``chunk.source == file``) and the hit's
chunk text (heading path and body, not the expanded section) contains
``must_contain`` after collapsing whitespace and case (`GoldEntry.found_in`). So
the small chunk itself must hold the fact, which is what the prompt cites.

Recall@k over answerable questions is the fraction of a question's gold entries
found in the top k, averaged; MRR@10 uses the first gold entry found. For the
relevance floor we report how many unanswerable questions were flagged
``no_good_match`` and how many answerable ones were flagged wrongly, and
suggest the ``min_score`` that separates them best.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from assistant.errors import ConfigError
from assistant.protocols import Searcher
from assistant.types import EvalQuestion, FollowUp, GoldEntry, Hit

__all__ = [
    "DEFAULT_CUTOFFS",
    "EvalQuestion",
    "EvalReport",
    "GoldEntry",
    "QuestionResult",
    "evaluate",
    "format_report",
    "load_questions",
    "report_to_json",
]

DEFAULT_CUTOFFS = (1, 3, 5, 10)


@dataclass(frozen=True, slots=True)
class QuestionResult:
    """How retrieval did on one question.

    ``found_ranks`` has one entry per gold entry: the 1-based rank where it was
    found, or 0 when it was not in the hits.
    """

    question: EvalQuestion
    found_ranks: tuple[int, ...]
    no_good_match: bool
    best_score: float

    def recall(self, k: int) -> float:
        """Return the fraction of gold entries found in the top ``k``."""
        return sum(0 < r <= k for r in self.found_ranks) / len(self.found_ranks)

    def reciprocal_rank(self, k: int = 10) -> float:
        """Return 1 / the rank of the first gold entry found within ``k`` (0 if none)."""
        ranks = [r for r in self.found_ranks if 0 < r <= k]
        return 1.0 / min(ranks) if ranks else 0.0


@dataclass(frozen=True, slots=True)
class EvalReport:
    """All per-question results and the figures computed from them."""

    results: tuple[QuestionResult, ...]
    cutoffs: tuple[int, ...]

    @property
    def answerable(self) -> tuple[QuestionResult, ...]:
        """Return results of questions with gold entries."""
        return tuple(r for r in self.results if r.question.gold)

    @property
    def unanswerable(self) -> tuple[QuestionResult, ...]:
        """Return results of questions without gold entries."""
        return tuple(r for r in self.results if not r.question.gold)

    def figures(self, kind: str | None = None) -> dict[str, float]:
        """Return recall@k, MRR@10 and the no-good-match rates (over one kind, or all)."""
        chosen = [r for r in self.results if kind is None or r.question.kind == kind]
        answerable = [r for r in chosen if r.question.gold]
        unanswerable = [r for r in chosen if not r.question.gold]
        out: dict[str, float] = {}
        if answerable:
            for k in self.cutoffs:
                out[f"recall@{k}"] = _mean(r.recall(k) for r in answerable)
            out["mrr@10"] = _mean(r.reciprocal_rank(10) for r in answerable)
            out["false_no_good_match"] = _mean(float(r.no_good_match) for r in answerable)
        if unanswerable:
            out["unanswerable_flagged"] = _mean(float(r.no_good_match) for r in unanswerable)
        return out

    def suggested_min_score(self) -> float:
        """Return the floor that best separates unanswerable from answerable best scores.

        Maximises (unanswerable flagged) - (answerable flagged) over midpoints between
        observed best scores; 0.0 when either group is empty.
        """
        good = sorted(r.best_score for r in self.answerable)
        bad = sorted(r.best_score for r in self.unanswerable)
        if not good or not bad:
            return 0.0
        values = sorted(set(good + bad))
        candidates = [(a + b) / 2 for a, b in itertools.pairwise(values)] or values

        def balance(t: float) -> float:
            return sum(s < t for s in bad) / len(bad) - sum(s < t for s in good) / len(good)

        best: float = max(candidates, key=lambda t: (balance(t), -t))
        return round(best, 3)


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else 0.0


def load_questions(path: Path) -> list[EvalQuestion]:
    """Read a JSONL question file.

    Raises:
        ConfigError: The file is missing or a line is not a valid question (line number named).
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read questions file {path}: {exc.strerror}") from exc
    questions = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            gold = tuple(
                GoldEntry(str(g["file"]), str(g.get("heading_path", "")), str(g["must_contain"]))
                for g in raw.get("gold", [])
            )
            questions.append(
                EvalQuestion(
                    str(raw["id"]),
                    str(raw["question"]),
                    str(raw.get("kind", "")),
                    gold,
                    answer=str(raw.get("answer", "")),
                    follow_up=_follow_up(raw.get("follow_up")),
                )
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{path}:{number}: not a valid question line ({exc})") from exc
    return questions


def _follow_up(raw: object) -> FollowUp | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise TypeError("follow_up must be an object with 'after' and 'question'")
    return FollowUp(str(raw["after"]), str(raw["question"]))


def found_ranks(gold: Sequence[GoldEntry], hits: Sequence[Hit]) -> tuple[int, ...]:
    """Return, per gold entry, the rank of the first hit that contains it (0 if none)."""
    return tuple(next((h.rank for h in hits if entry.found_in(h)), 0) for entry in gold)


def evaluate(
    searcher: Searcher,
    questions: Sequence[EvalQuestion],
    *,
    cutoffs: Sequence[int] = DEFAULT_CUTOFFS,
) -> EvalReport:
    """Search every question once (``k`` = the largest cutoff) and score the hits."""
    depth = max(cutoffs)
    results = []
    for question in questions:
        result = searcher.search(question.question, k=depth)
        results.append(
            QuestionResult(
                question=question,
                found_ranks=found_ranks(question.gold, result.hits),
                no_good_match=result.no_good_match,
                best_score=max((h.score for h in result.hits), default=0.0),
            )
        )
    return EvalReport(results=tuple(results), cutoffs=tuple(sorted(set(cutoffs))))


def report_to_json(report: EvalReport) -> dict[str, object]:
    """Return the report as plain JSON-ready data (overall, per kind, per question)."""
    kinds = sorted({r.question.kind for r in report.results})
    return {
        "overall": report.figures(),
        "by_kind": {kind: report.figures(kind) for kind in kinds},
        "counts": {"answerable": len(report.answerable), "unanswerable": len(report.unanswerable)},
        "suggested_min_score": report.suggested_min_score(),
        "questions": [
            {
                "id": r.question.id,
                "kind": r.question.kind,
                "found_ranks": list(r.found_ranks),
                "no_good_match": r.no_good_match,
                "best_score": round(r.best_score, 4),
            }
            for r in report.results
        ],
    }


def format_report(report: EvalReport) -> str:
    """Return a readable table: overall and per-kind figures, misses, and the suggested floor."""
    kinds = sorted({r.question.kind for r in report.results})
    columns = [f"recall@{k}" for k in report.cutoffs] + [
        "mrr@10",
        "false_no_good_match",
        "unanswerable_flagged",
    ]
    lines = [f"{'':14}" + "".join(f"{c:>22}" for c in columns)]
    for label, kind in [("all", None)] + [(k, k) for k in kinds]:
        figures = report.figures(kind)
        cells = "".join(f"{figures[c]:>22.3f}" if c in figures else f"{'-':>22}" for c in columns)
        lines.append(f"{label:14}{cells}")
    missed = [r.question.id for r in report.answerable if not any(r.found_ranks)]
    lines.append(f"answerable {len(report.answerable)}, unanswerable {len(report.unanswerable)}")
    lines.append(f"not found in top {max(report.cutoffs)}: {', '.join(missed) or 'none'}")
    lines.append(f"suggested min_score: {report.suggested_min_score():.3f}")
    return "\n".join(lines)
