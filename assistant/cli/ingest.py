"""Command line of ``ingest.py``: flags, wiring, summary, exit codes.

Exit codes: 0 success (problems with single files are reported but do not fail
the run unless ``--strict``), 1 the run failed (``--strict`` problems, store or
model errors), 2 bad usage or configuration, 3 another ingest holds the index.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Never, TextIO

from assistant.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    printable,
    report_error,
    settings_with_index,
)
from assistant.cli._common import configure_logging as configure_logging
from assistant.config import Settings
from assistant.errors import AssistantError
from assistant.index.ingest import IngestReport, Progress

if TYPE_CHECKING:
    from tqdm import tqdm

__all__ = ["ingest_main", "report_to_json"]

logger = logging.getLogger(__name__)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ingest.py",
        description="Index policy documents (Markdown, text, HTML, PDF, DOCX) for the assistant.",
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="folders or files")
    parser.add_argument("--index", type=Path, help="index directory (env ASSISTANT_INDEX)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    parser.add_argument(
        "--prune",
        action="store_true",
        help="also remove documents ingested earlier from folders not given now",
    )
    parser.add_argument("--strict", action="store_true", help="write nothing if any file fails")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--rebuild", action="store_true", help="drop the index and re-embed all")
    parser.add_argument("--wait", action="store_true", help="wait for a running ingest to end")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    return parser


def ingest_main(
    argv: Sequence[str] | None = None,
    *,
    environ: dict[str, str] | None = None,
    stdout: TextIO | None = None,
) -> int:
    """Run ``ingest.py`` and return its exit code."""
    out = stdout or sys.stdout
    args = _parser().parse_args(argv)
    configure_logging(args.verbose)
    bar = _ProgressBar(enabled=not args.json)
    try:
        settings = settings_with_index(os.environ if environ is None else environ, args.index)
        report = _run(args, settings, progress=bar)
    except AssistantError as exc:
        return report_error(exc, sys.stderr)
    finally:
        bar.close()
    if args.json:
        print(
            json.dumps(report_to_json(report, index=str(settings.store.path)), indent=2), file=out
        )
    else:
        print(printable(_summary(report)), file=out)
    return EXIT_FAILED if args.strict and report.problems else EXIT_OK


def _run(args: argparse.Namespace, settings: Settings, *, progress: Progress) -> IngestReport:
    from assistant.embeddings.factory import make_embedder
    from assistant.index.ingest import ingest

    return ingest(
        args.paths,
        settings=settings,
        embedder=make_embedder(settings.embedding),
        dry_run=args.dry_run,
        prune=args.prune,
        strict=args.strict,
        rebuild=args.rebuild,
        wait=args.wait,
        progress=progress,
    )


class _ProgressBar:
    """A progress callback drawing one tqdm bar on a terminal.

    The bar follows the documents being parsed until chunks are being embedded, then
    the chunks (the slow part: embedding and writing) with their rate and an ETA, the
    documents parsed so far as its postfix. Nothing is drawn unless ``enabled`` and the
    stream is a terminal: in a log file or CI output every redraw would be a line of
    carriage returns.
    """

    def __init__(self, *, enabled: bool, stream: TextIO | None = None) -> None:
        self._out = stream or sys.stderr
        self._enabled = enabled and _is_terminal(self._out)
        self._bars: dict[str, tqdm[Never]] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self._enabled:
            return
        if stage == "documents" and "chunks" in self._bars:
            self._bars["chunks"].set_postfix_str(f"{done}/{total} documents", refresh=False)
            return
        bar = self._bars.get(stage)
        if bar is None or done < bar.n:  # a new pass over the same stage
            self.close()
            bar = self._bars[stage] = self._new_bar(stage, max(total, done))
        bar.total = max(total, done)
        bar.n = done
        bar.refresh()

    def _new_bar(self, stage: str, total: int) -> tqdm[Never]:
        from tqdm import tqdm

        chunks = stage == "chunks"
        return tqdm(
            total=total,
            desc="embedding" if chunks else "parsing",
            unit="chunk" if chunks else "doc",
            leave=False,
            file=self._out,
            dynamic_ncols=True,
        )

    def close(self) -> None:
        """Remove the bars from the terminal (before the summary is printed)."""
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def report_to_json(report: IngestReport, *, index: str) -> dict[str, object]:
    """Return the machine-readable summary printed by ``--json``."""
    return {
        "index": index,
        "dry_run": report.dry_run,
        "documents": {
            "added": list(report.added),
            "changed": list(report.changed),
            "unchanged": list(report.unchanged),
            "removed": list(report.removed),
            "failed": [{"source": p.source, "reason": p.reason} for p in report.problems],
            "skipped": [{"source": s.source, "reason": s.reason} for s in report.skipped],
        },
        "counts": {
            "added": len(report.added),
            "changed": len(report.changed),
            "unchanged": len(report.unchanged),
            "removed": len(report.removed),
            "failed": len(report.problems),
            "skipped": len(report.skipped),
        },
        "chunks": {
            "written": report.chunks_written,
            "deleted": report.chunks_deleted,
            "oversize": report.chunks_oversize,
        },
        "timings_s": {stage: round(seconds, 4) for stage, seconds in report.timings},
    }


def _summary(report: IngestReport) -> str:
    verb: Callable[[str, str], str] = (lambda now, _: now) if report.dry_run else (lambda _, d: d)
    lines = [
        "Plan (dry run, nothing written):" if report.dry_run else "Ingest finished:",
        f"  documents: {len(report.added)} {verb('to add', 'added')}, "
        f"{len(report.changed)} {verb('to replace', 'changed')}, "
        f"{len(report.unchanged)} unchanged, {len(report.removed)} "
        f"{verb('to remove', 'removed')}, {len(report.problems)} failed"
        + (f", {len(report.skipped)} skipped (no text)" if report.skipped else ""),
        f"  chunks: {report.chunks_written} {verb('to write', 'written')}, "
        f"{report.chunks_deleted} {verb('to delete', 'deleted')}"
        + (
            f", {report.chunks_oversize} longer than the embedder reads"
            if report.chunks_oversize
            else ""
        ),
    ]
    for label, names in (
        ("added", report.added),
        ("changed", report.changed),
        ("removed", report.removed),
    ):
        lines.extend(f"  {label}: {printable(name, inline=True)}" for name in names)
    lines.extend(
        f"  FAILED {printable(p.source, inline=True)}: {printable(p.reason, inline=True)}"
        for p in report.problems
    )
    lines.extend(
        f"  skipped {printable(s.source, inline=True)}: {printable(s.reason, inline=True)}"
        for s in report.skipped
    )
    if report.timings:
        lines.append("  time: " + ", ".join(f"{s} {t:.2f}s" for s, t in report.timings))
    return "\n".join(lines)
