"""``python -m assistant report``: the gaps report (filled in below)."""

from __future__ import annotations

import argparse
from typing import TextIO

from assistant.audit.store import AuditStore
from assistant.config import Settings
from assistant.types import AuditRecord, Feedback

__all__ = ["run_report"]

del AuditStore


def run_report(
    args: argparse.Namespace,
    settings: Settings,
    rows: list[tuple[AuditRecord, Feedback | None]],
    *,
    out: TextIO,
) -> int:
    """Print the gaps report."""
    del args, settings
    out.write(f"{len(rows)} questions\n")
    return 0
