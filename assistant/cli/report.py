"""``python -m assistant report [--since DATE] [--html FILE]``: the gaps report.

Questions are grouped with the index's embedding model (the one configured);
the documents never cited are those of the current index. Without an index
the report still runs: identical questions group together and every document
counts as cited.
"""

from __future__ import annotations

import argparse
import io
import logging
from pathlib import Path
from typing import TextIO

from assistant.audit.report import GapsReport, build_report, report_html, report_text
from assistant.cli._common import EXIT_OK, printable
from assistant.config import Settings
from assistant.errors import AssistantError, ConfigError
from assistant.protocols import Embedder
from assistant.session import shared_embedder
from assistant.types import AuditRecord, Feedback

__all__ = ["chart_png", "run_report"]

logger = logging.getLogger(__name__)


def run_report(
    args: argparse.Namespace,
    settings: Settings,
    rows: list[tuple[AuditRecord, Feedback | None]],
    *,
    out: TextIO,
    embedder: Embedder | None = None,
) -> int:
    """Print the gaps report of ``rows``; with ``--html``, also write it as a page."""
    documents: dict[str, str] = {}
    try:
        if embedder is None:
            embedder = shared_embedder(settings)
        documents = _documents(settings, embedder)
    except AssistantError as exc:
        logger.warning("the report groups identical questions only: %s", exc)
    report = build_report(rows, embedder=embedder, documents=documents, since=args.since)
    print(printable(report_text(report)), file=out)
    if args.html:
        _write_html(args.html, report)
        print(f"Wrote {args.html}", file=out)
    return EXIT_OK


def _documents(settings: Settings, embedder: Embedder) -> dict[str, str]:
    from assistant.index.reader import IndexReader

    reader = IndexReader(
        settings.store, embedder_identity=embedder.identity, dimension=embedder.dimension
    )
    docs = reader.snapshot().docs
    return {source: meta.title or source for source, meta in docs.items()}


def _write_html(path: Path, report: GapsReport) -> None:
    png: bytes | None = None
    try:
        png = chart_png(report)
    except ConfigError as exc:
        logger.warning("%s; the HTML report has no chart", exc)
    try:
        path.write_text(report_html(report, chart_png=png), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from exc


def chart_png(report: GapsReport) -> bytes:
    """Return a bar chart of questions per day, answered and not answered, as PNG bytes.

    Raises:
        ConfigError: matplotlib is not installed.
    """
    from assistant.cli._charts import pyplot

    plt = pyplot("the report's chart")
    days = [day for day, _, _ in report.per_day]
    answered = [a for _, a, _ in report.per_day]
    unanswered = [u for _, _, u in report.per_day]
    figure, axes = plt.subplots(figsize=(max(6, len(days) * 0.35), 3.5))
    axes.bar(days, answered, label="answered", color="#4a7bd0")
    axes.bar(days, unanswered, bottom=answered, label="not answered", color="#e07b39")
    axes.set_ylabel("questions")
    axes.set_title("Questions per day")
    axes.legend(fontsize="small")
    axes.tick_params(axis="x", labelrotation=60, labelsize="small")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    return buffer.getvalue()
