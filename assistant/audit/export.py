"""The audit log as JSON lines or CSV, and thumbs-down corrections as evaluation candidates.

Everything exported was typed by someone (questions, reasons, corrections) or
written by a model, and the reader is an administrator's terminal or spreadsheet.
So JSON lines escape every control, bidi and separator character (`json_line`),
and each CSV cell escapes them visibly and, as OWASP advises against formula
injection, starts with a single quote when it would start with ``= + - @``,
a tab or a carriage return (`csv_cell`; full-width forms too).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable
from dataclasses import asdict
from typing import TextIO

from assistant.types import AuditRecord, Feedback

__all__ = [
    "CSV_COLUMNS",
    "csv_cell",
    "eval_candidates",
    "json_line",
    "record_to_json",
    "write_csv",
    "write_json_lines",
]

# What ``json.dumps(ensure_ascii=False)`` leaves raw but a terminal acts on: DEL, C1
# (U+009B is CSI), line and paragraph separators, bidi controls, lone surrogates (which
# could not even be written as UTF-8). C0 it escapes itself.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# In a CSV cell: C0 except line feed and tab, DEL, C1, separators, bidi, surrogates.
_CELL_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
# A spreadsheet reads a cell starting with one of these as a formula (full-width too).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")

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


def json_line(value: object) -> str:
    r"""Return ``value`` as one line of JSON, every control character escaped (``\u009b``)."""
    text = json.dumps(value, ensure_ascii=False)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", text) + "\n"


def csv_cell(value: object) -> object:
    r"""Return ``value`` safe as a CSV cell: controls as ``\x1b``, formulas as text."""
    if not isinstance(value, str):
        return value
    text = _CELL_UNSAFE.sub(_escape, value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def write_json_lines(rows: Iterable[Row], out: TextIO) -> int:
    """Write one JSON object per record; return how many."""
    count = 0
    for record, feedback in rows:
        out.write(json_line(record_to_json(record, feedback)))
        count += 1
    return count


def write_csv(rows: Iterable[Row], out: TextIO) -> int:
    """Write one CSV row per record (sources as ``;``-joined chunk ids); return how many."""
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    count = 0
    for record, feedback in rows:
        writer.writerow(
            csv_cell(cell)
            for cell in (
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
            )
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
