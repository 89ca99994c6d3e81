"""``python -m assistant audit|feedback|changes|report``: what staff asked, and what changed.

``audit export [--since DATE] [--csv]`` writes the audit log (JSON lines by
default, one record per line with its feedback); ``feedback export [--eval]``
writes the answers rated down (with ``--eval``: those with a correction, as
candidate ``data/eval/`` questions); ``changes [--since DATE] [--json]`` lists
what each ingest changed; ``report [--since DATE] [--html FILE]`` is the gaps
report (`assistant.cli.report`).
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from assistant.audit.export import (
    eval_candidates,
    json_line,
    record_to_json,
    write_csv,
    write_json_lines,
)
from assistant.audit.store import AuditStore
from assistant.cli._common import EXIT_OK, printable
from assistant.config import Settings
from assistant.errors import ConfigError
from assistant.index.changes import read_changes
from assistant.types import DocumentChange

__all__ = ["COMMANDS", "add_commands", "format_changes", "run_command"]

COMMANDS = ("audit", "feedback", "changes", "report")


def add_commands(commands: Any, add_common: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add the audit, feedback, changes and report commands to ``python -m assistant``."""
    audit = commands.add_parser("audit", help="export the audit log of questions and answers")
    audit.add_argument("action", choices=("export",))
    audit.add_argument("--csv", action="store_true", help="CSV instead of JSON lines")
    feedback = commands.add_parser("feedback", help="export the answers users rated down")
    feedback.add_argument("action", choices=("export",))
    feedback.add_argument(
        "--eval", action="store_true", help="corrections as candidate data/eval/ questions"
    )
    changes = commands.add_parser("changes", help="list what each ingest changed")
    report = commands.add_parser("report", help="the gaps report: what the documents miss")
    report.add_argument("--html", type=Path, help="also write the report as HTML with a chart")
    for parser in (audit, feedback, changes, report):
        parser.add_argument("--since", default="", help="from this date on (YYYY-MM-DD)")
        add_common(parser)


def run_command(args: argparse.Namespace, settings: Settings, *, out: TextIO) -> int:
    """Run one of `COMMANDS`; return the exit code.

    Raises:
        ConfigError: A bad ``--since``.
        StoreError: The audit log cannot be read.
    """
    since = _since(args.since)
    if args.command == "changes":
        changes = read_changes(settings.store.path, since=since)
        if args.json:
            for change in changes:
                out.write(json_line(_change_json(change)))
        else:
            print(printable(format_changes(changes)), file=out)
        return EXIT_OK
    store = AuditStore(settings.audit.audit_path(settings.store.path))
    rows = store.records(since=since)
    if args.command == "audit":
        (write_csv if args.csv else write_json_lines)(rows, out)
    elif args.command == "feedback":
        if args.eval:
            lines = eval_candidates(rows)
        else:
            lines = [record_to_json(r, f) for r, f in rows if f is not None and f.rating == "down"]
        for line in lines:
            out.write(json_line(line))
    else:
        from assistant.cli.report import run_report

        return run_report(args, settings, rows, out=out)
    return EXIT_OK


def _since(value: str) -> str:
    if not value:
        return ""
    try:
        return dt.date.fromisoformat(value).isoformat()
    except ValueError as exc:
        raise ConfigError(f"--since must be a date like 2024-01-31, got {value!r}") from exc


def _change_json(change: DocumentChange) -> dict[str, object]:
    return {
        "time": change.time,
        "source": change.source,
        "title": change.title,
        "change": change.change,
        "sections_added": list(change.sections_added),
        "sections_removed": list(change.sections_removed),
        "sections_edited": list(change.sections_edited),
        "old_effective_date": change.old_effective_date,
        "new_effective_date": change.new_effective_date,
        "old_version": change.old_version,
        "new_version": change.new_version,
    }


def format_changes(changes: list[DocumentChange]) -> str:
    """Return the change list as text, newest first."""
    if not changes:
        return "No changes recorded."
    lines = []
    for change in reversed(changes):
        lines.append(f"{change.time[:10]}  {change.change:<7}  {change.title} ({change.source})")
        if change.old_version != change.new_version and change.change == "edited":
            lines.append(f"    version {change.old_version or '-'} -> {change.new_version or '-'}")
        if change.old_effective_date != change.new_effective_date and change.change == "edited":
            old, new = change.old_effective_date or "-", change.new_effective_date or "-"
            lines.append(f"    effective {old} -> {new}")
        for label, paths in (
            ("+", change.sections_added if change.change == "edited" else ()),
            ("-", change.sections_removed if change.change == "edited" else ()),
            ("~", change.sections_edited),
        ):
            lines += [f"    {label} {path}" for path in paths]
    return "\n".join(lines)
