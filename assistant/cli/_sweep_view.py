"""An evaluation sweep's rows as a table, JSON and a chart (``eval --sweep [--plot]``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from assistant.cli._charts import pyplot
from assistant.errors import ConfigError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["SweepRow", "format_sweep", "plot_sweep", "sweep_figure", "sweep_json"]


@dataclass(frozen=True, slots=True)
class SweepRow:
    """The figures for one combination of settings."""

    chunk_tokens: int
    overlap: float
    mode: str
    k: int
    chunks: int
    recall: float
    mrr: float
    unanswerable_flagged: float
    false_no_good_match: float
    suggested_min_score: float


_COLUMNS = (
    "chunk_tokens",
    "overlap",
    "mode",
    "k",
    "chunks",
    "recall",
    "mrr",
    "unanswerable_flagged",
    "false_no_good_match",
    "suggested_min_score",
)


def format_sweep(rows: Sequence[SweepRow]) -> str:
    """Return the sweep as an aligned table, best recall@k first."""
    header = "".join(f"{c:>21}" for c in _COLUMNS)
    body = []
    for row in sorted(rows, key=lambda r: (-r.recall, -r.mrr)):
        cells = [getattr(row, c) for c in _COLUMNS]
        body.append("".join(f"{v:>21.3f}" if isinstance(v, float) else f"{v!s:>21}" for v in cells))
    return "\n".join([header, *body])


def sweep_json(rows: Sequence[SweepRow]) -> str:
    """Return the rows as a JSON list of their columns."""
    return json.dumps([{c: getattr(r, c) for c in _COLUMNS} for r in rows], indent=2)


def plot_sweep(rows: Sequence[SweepRow], path: Path) -> None:
    """Write `sweep_figure` of ``rows`` as a PNG at ``path``.

    Raises:
        ConfigError: matplotlib is not installed.
    """
    figure = sweep_figure(rows)
    try:
        figure.savefig(path, dpi=110)
    except OSError as exc:
        raise ConfigError(f"cannot write the plot {path}: {exc.strerror or exc}") from exc
    finally:
        pyplot("the sweep plot").close(figure)


def sweep_figure(rows: Sequence[SweepRow]) -> Figure:
    """Return a chart of the sweep: recall@k (left) and MRR@10 (right) per chunking setting.

    One line per mode and k on the left, per mode on the right. Each y-axis spans only
    the figures it shows (plus a margin), so 0.92 against 0.96 is a visible gap rather
    than a few pixels at the top of a 0-to-1 axis.

    Raises:
        ConfigError: matplotlib is not installed.
    """
    plt = pyplot("the sweep plot")
    settings = sorted({(r.chunk_tokens, r.overlap) for r in rows})
    labels = [f"{t} tok\n{o:.2f} ov" for t, o in settings]
    width = max(9, len(settings) * 2.0)
    figure, (recall_axes, mrr_axes) = plt.subplots(1, 2, figsize=(width, 4.5))
    recall_lines = {
        f"{mode} @{k}": {
            (r.chunk_tokens, r.overlap): r.recall for r in rows if (r.mode, r.k) == (mode, k)
        }
        for mode, k in sorted({(r.mode, r.k) for r in rows})
    }
    mrr_lines = {
        mode: {(r.chunk_tokens, r.overlap): r.mrr for r in rows if r.mode == mode}
        for mode in sorted({r.mode for r in rows})
    }
    for axes, lines, name in (
        (recall_axes, recall_lines, "recall@k"),
        (mrr_axes, mrr_lines, "MRR@10"),
    ):
        shown: list[float] = []
        for label, values in lines.items():
            line = [values.get(s, float("nan")) for s in settings]
            axes.plot(labels, line, marker="o", label=label)
            shown += [v for v in line if v == v]  # v == v drops NaN
        axes.set_ylim(*_y_limits(shown))
        axes.set_xlabel("chunking: tokens per chunk, overlap")
        axes.set_ylabel(f"{name} (higher is better)")
        axes.set_title(
            f"{name} by chunking" + (", mode and k" if name == "recall@k" else " and mode")
        )
        axes.grid(axis="y", alpha=0.3)
        axes.legend(fontsize="small")
    figure.tight_layout()
    return cast("Figure", figure)


def _y_limits(values: Sequence[float]) -> tuple[float, float]:
    """Return y-limits around ``values``: a margin of 15% of their spread, at least 0.01."""
    if not values:
        return 0.0, 1.0
    low, high = min(values), max(values)
    margin = max((high - low) * 0.15, 0.01)
    return max(0.0, low - margin), min(1.0 + margin / 2, high + margin)
