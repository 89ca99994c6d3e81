"""The audit log as JSON lines or CSV, and thumbs-down corrections as evaluation candidates."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from dataclasses import asdict
from typing import TextIO

from assistant.types import AuditRecord, Feedback

__all__ = ["CSV_COLUMNS", "eval_candidates", "record_to_json", "write_csv", "write_json_lines"]

Row = tuple[AuditRecord, Feedback | None]
CSV_COLUMNS = (
    "id",
    "time",
    "user",
    "question",
    "query",
    "mode",
    "no_match",
    "not_covered",
    "unsupported",
    "sources",
    "answer",
    "rating",
    "reason",
    "correction",
    "total_ms",
)


def record_to_json(record: AuditRecord, feedback: Feedback | None) -> dict[str, object]:
    """Return one record with its feedback as the export writes it."""
    return {
        "id": record.record_id,
        "time": record.time,
        "user": record.user,
        "question": record.question,
        "query": record.query,
        "filters": asdict(record.filters),
        "mode": record.mode,
        "flags": {
            "no_match": record.no_match,
            "not_covered": record.not_covered,
            "unsupported": list(record.unsupported),
        },
        "sources": [asdict(source) for source in record.sources],
        "answer": record.answer,
        "timings_ms": dict(record.timings_ms),
        "feedback": _feedback_json(feedback),
    }


def _feedback_json(feedback: Feedback | None) -> dict[str, str] | None:
    if feedback is None:
        return None
    return {
        "time": feedback.time,
        "user": feedback.user,
        "rating": feedback.rating,
        "reason": feedback.reason,
        "correction": feedback.correction,
    }


def write_json_lines(rows: Iterable[Row], out: TextIO) -> int:
    """Write one JSON object per record; return how many."""
    count = 0
    for record, feedback in rows:
        out.write(json.dumps(record_to_json(record, feedback), ensure_ascii=False) + "\n")
        count += 1
    return count


def write_csv(rows: Iterable[Row], out: TextIO) -> int:
    """Write one CSV row per record (sources as ``;``-joined chunk ids); return how many."""
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    count = 0
    for record, feedback in rows:
        writer.writerow(
            [
                record.record_id,
                record.time,
                record.user,
                record.question,
                record.query,
                record.mode,
                int(record.no_match),
                int(record.not_covered),
                len(record.unsupported),
                ";".join(s.chunk_id for s in record.sources),
                record.answer,
                feedback.rating if feedback else "",
                feedback.reason if feedback else "",
                feedback.correction if feedback else "",
                dict(record.timings_ms).get("total", ""),
            ]
        )
        count += 1
    return count


def eval_candidates(rows: Iterable[Row]) -> list[dict[str, object]]:
    """Return thumbs-down answers with a correction as ``data/eval/`` question lines.

    The gold entry points at the section the answer cited first (or its best
    source) with an empty ``must_contain``: an administrator fills in the phrase
    (and the right file, if the answer cited the wrong one) before the line joins
    an evaluation set; ``review`` says what the user saw and why they objected.
    """
    candidates: list[dict[str, object]] = []
    for record, feedback in rows:
        if feedback is None or feedback.rating != "down" or not feedback.correction.strip():
            continue
        cited = [s for s in record.sources if s.cited] or list(record.sources[:1])
        gold = [
            {"file": s.source, "heading_path": s.heading_path, "must_contain": ""} for s in cited
        ]
        candidates.append(
            {
                "id": f"fb{record.record_id[:8]}",
                "question": record.question,
                "kind": "fact",
                "gold": gold[:1],
                "answer": feedback.correction.strip(),
                "review": {
                    "record_id": record.record_id,
                    "asked": record.time,
                    "reason": feedback.reason,
                    "answer_given": record.answer,
                    "todo": "set gold[0].must_contain to a 3-8 word phrase of the document",
                },
            }
        )
    return candidates
