"""``python -m assistant sync sharepoint``: documents from SharePoint / OneDrive into the index.

The configuration file (``--config`` or ``ASSISTANT_SHAREPOINT_CONFIG``, see
docs/sharepoint.md) names the tenant, the app, where its secret or certificate
is kept, and the drives. ``--every 15m`` keeps syncing until interrupted.
Exit codes: 0 synced, 1 a drive or the ingest failed, 2 configuration, 3 busy.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from assistant.cli._common import EXIT_FAILED, EXIT_OK, json_text, report_error
from assistant.config import Settings
from assistant.errors import AssistantError
from assistant.protocols import Embedder
from assistant.sync.run import SyncReport, sync_sources
from assistant.sync.schedule import parse_interval, run_every
from assistant.sync.settings import config_path, load_config

__all__ = ["add_sync_parser", "run_sync"]


def add_sync_parser(commands: Any, add_common: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``sync sharepoint`` to ``python -m assistant``."""
    sync = commands.add_parser("sync", help="sync documents from SharePoint or OneDrive")
    sync.add_argument("source", choices=("sharepoint",))
    sync.add_argument(
        "--config", type=Path, help="sync configuration (env ASSISTANT_SHAREPOINT_CONFIG)"
    )
    sync.add_argument(
        "--every", default="", metavar="DURATION", help="sync again every 15m, 1h, ..."
    )
    add_common(sync)


def run_sync(
    args: argparse.Namespace,
    settings: Settings,
    environ: Mapping[str, str],
    *,
    out: TextIO,
    err: TextIO,
    embedder_factory: Callable[[Settings], Embedder],
    stop: threading.Event | None = None,
) -> int:
    """Run one sync, or syncs on a schedule; return the exit code."""
    try:
        config = load_config(config_path(args.config, environ), environ)
        interval = parse_interval(args.every) if args.every else 0.0
    except AssistantError as exc:
        return report_error(exc, err)

    def once() -> SyncReport:
        report = sync_sources(
            config, settings=settings, embedder=lambda: embedder_factory(settings)
        )
        _print(report, out, as_json=args.json)
        return report

    if interval:
        failed = run_every(interval, once, stop=stop or threading.Event())
        return EXIT_FAILED if failed else EXIT_OK
    try:
        report = once()
    except AssistantError as exc:
        return report_error(exc, err)
    for failure in report.failures:
        err.write(f"error: {failure}\n")
    return EXIT_FAILED if report.failures or report.ingest.problems else EXIT_OK


def _print(report: SyncReport, out: TextIO, *, as_json: bool) -> None:
    ingest = report.ingest
    if as_json:
        out.write(
            json_text(
                {
                    "drives": [
                        {
                            "drive": d.drive,
                            "downloaded": d.downloaded,
                            "relabelled": d.relabelled,
                            "removed": d.removed,
                            "resynced": d.resynced,
                        }
                        for d in report.drives
                    ],
                    "added": len(ingest.added),
                    "changed": len(ingest.changed),
                    "unchanged": len(ingest.unchanged),
                    "removed": len(ingest.removed),
                    "problems": [{"source": p.source, "reason": p.reason} for p in ingest.problems],
                    "requests": dict(report.requests),
                    "failures": list(report.failures),
                    "seconds": round(report.seconds, 3),
                }
            )
            + "\n"
        )
    else:
        for d in report.drives:
            resync = " (full resync)" if d.resynced else ""
            out.write(
                f"{d.drive}: {d.downloaded} downloaded, {d.relabelled} relabelled, "
                f"{d.removed} removed{resync}\n"
            )
        out.write(
            f"index: {len(ingest.added)} added, {len(ingest.changed)} changed, "
            f"{len(ingest.unchanged)} unchanged, {len(ingest.removed)} removed "
            f"in {report.seconds:.1f} s\n"
        )
        for problem in ingest.problems:
            out.write(f"problem: {problem.source}: {problem.reason}\n")
    out.flush()
