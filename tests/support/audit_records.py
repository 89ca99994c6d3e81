"""Audit records for the audit tests, importable by a writer process without the test modules.

`record(n)` is one answered question with one source (fields overridable by keyword);
`written(log)` flushes a log and returns what its store holds. A subprocess that writes
records imports this module alone, not a test module and all it imports.
"""

from __future__ import annotations

from assistant.audit.log import AuditLog
from assistant.types import AuditRecord, AuditSource, Feedback, SearchFilters

__all__ = ["record", "written"]


def record(
    n: int = 0, *, user: str = "amina", time: str = "2026-11-30T09:00:00+00:00", **kw: object
) -> AuditRecord:
    fields: dict[str, object] = {
        "record_id": f"r{n:05d}",
        "time": time,
        "user": user,
        "question": f"What is the emergency loan rate? ({n})",
        "query": "emergency loan rate",
        "filters": SearchFilters(tags=("loans",)),
        "sources": (
            AuditSource(
                1,
                "loan-policy.md#3",
                "loan-policy.md",
                "Loan Policy",
                "Loan Policy > Emergency Loans",
                0,
                "2026-01-01",
                "3",
                0.87,
                True,
            ),
        ),
        "answer": "12% per annum [1].",
        "mode": "extractive",
        "no_match": False,
        "not_covered": False,
        "unsupported": (),
        "timings_ms": (("retrieval", 12.0), ("total", 40.0)),
    }
    fields.update(kw)
    return AuditRecord(**fields)  # type: ignore[arg-type]


def written(log: AuditLog) -> list[tuple[AuditRecord, Feedback | None]]:
    assert log.flush()
    return log.store.records()
