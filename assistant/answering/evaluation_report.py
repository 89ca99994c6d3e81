"""The answer-level evaluation as a readable table, a list of misses, or JSON."""

from __future__ import annotations

from collections.abc import Sequence

from assistant.answering.evaluation import (
    METRICS,
    ORACLE_METRICS,
    TOP_SECTIONS,
    AnswerOutcome,
    AnswerReport,
)
from assistant.answering.model_eval import MODEL_METRICS

__all__ = ["format_answer_reports", "format_misses", "reports_to_json"]


def format_answer_reports(reports: Sequence[AnswerReport]) -> str:
    """Return the reports side by side, one column per answerer: overall, then per kind."""
    if not reports:
        return ""
    metrics = tuple(dict.fromkeys((*METRICS, *ORACLE_METRICS, *MODEL_METRICS)))
    label_width = max(len(label) for _, label in metrics) + 2
    lines = [" " * label_width + "".join(f"{r.answerer:>12}" for r in reports)]
    kinds = list(dict.fromkeys(kind for r in reports for kind in r.kinds()))
    for kind in [None, *kinds]:
        counts = next(r for r in reports if kind is None or kind in r.kinds()).counts(kind)
        lines.append(
            f"{kind or 'all'}: {counts['answerable']} answerable ({counts['with_figures']} with "
            f"figures, {counts['gold_top5']} gold in top {TOP_SECTIONS}), "
            f"{counts['unanswerable']} unanswerable"
        )
        rows = [(r.figures(kind)) for r in reports]
        for key, label in metrics:
            if any(key in row for row in rows):
                cells = "".join(_cell(key, row.get(key)) for row in rows)
                lines.append(f"  {label:<{label_width - 2}}{cells}")
    return "\n".join(lines)


def _cell(key: str, value: float | None) -> str:
    if value is None:
        return f"{'-':>12}"
    return f"{value:>12.1f}" if key == "median_words" or key.endswith("_ms") else f"{value:>12.3f}"


def format_misses(report: AnswerReport) -> str:
    """Return each failed question: what failed, the question, the gold phrases, the answer."""
    lines = [f"misses of {report.answerer}: {len(report.misses())} of {len(report.outcomes)}"]
    for outcome in report.misses():
        failed = list(outcome.failures())
        if outcome.missing_figures and "figures" in failed:
            failed[failed.index("figures")] = (
                "figures (missing " + ", ".join(outcome.missing_figures) + ")"
            )
        question = outcome.question
        lines.append(f"{question.id} [{question.kind}, {outcome.mode}] {'; '.join(failed)}")
        lines.append(f"  question: {question.question}")
        for gold in question.gold:
            lines.append(f"  gold: {gold.must_contain!r} in {gold.file}")
        answer = "\n".join("    " + line for line in outcome.answer.splitlines() if line.strip())
        lines.append(f"  answer:\n{answer or '    (empty)'}")
    return "\n".join(lines)


def reports_to_json(reports: Sequence[AnswerReport]) -> dict[str, object]:
    """Return the reports as JSON-ready data: per answerer, overall, per kind, per question."""
    return {
        report.answerer: {
            # The oracle's five figures, overall, are also right under its name, and so
            # are a model answerer's (`assistant.answering.model_eval`).
            **report.oracle_figures(),
            **report.model_figures(),
            "overall": report.figures(),
            "by_kind": {kind: report.figures(kind) for kind in report.kinds()},
            "counts": report.counts(),
            "counts_by_kind": {kind: report.counts(kind) for kind in report.kinds()},
            "questions": [_outcome_json(o) for o in report.outcomes],
        }
        for report in reports
    }


def _outcome_json(outcome: AnswerOutcome) -> dict[str, object]:
    return {
        "id": outcome.question.id,
        "kind": outcome.question.kind,
        "mode": outcome.mode,
        "answer": outcome.answer,
        "gold_phrase": outcome.gold_phrase,
        "reference_figures": list(outcome.reference_figures),
        "missing_figures": list(outcome.missing_figures),
        "cited_gold_file": outcome.cited_gold_file,
        "words": outcome.words,
        "refused": outcome.refused,
        "gold_top5": outcome.gold_top5,
        "failures": list(outcome.failures()),
        **(
            {}
            if outcome.oracle is None
            else {
                "reached": outcome.oracle.reached,
                "asked": outcome.oracle.asked,
                "right": outcome.right,
            }
        ),
        **({} if outcome.model is None else _model_json(outcome)),
    }


def _model_json(outcome: AnswerOutcome) -> dict[str, object]:
    assert outcome.model is not None
    trace = outcome.model
    return {
        "right": outcome.right,
        "cited_right": trace.cited_right,
        "cites_gold": trace.cites_gold,
        "invented": trace.invented,
        "refused_answerable": outcome.answerable and outcome.refused,
        "unanswerable_flagged": not outcome.answerable and outcome.refused,
        "first_token_ms": round(trace.first_token_ms, 1),
        "total_ms": round(trace.total_ms, 1),
    }
