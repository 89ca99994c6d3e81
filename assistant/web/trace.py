"""The service's trace lines made readable for the chat's Trace panel.

The service writes compact lines for logs and the CLI: filters as a Python repr,
candidates as comma-joined chunk ids, timings from both the service and the UI.
In the chat each candidate gets a line of its own with its document title and
section, filters read as words, and each timing appears once. A reasoning model's
thinking is shown collapsed beneath them (`reasoning_block`), escaped, never as answer.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence

__all__ = ["readable_trace", "reasoning_block"]

ChunkNames = Callable[[str], str]

_LIST_LINE = re.compile(
    r"^(dense top \d+|lexical top \d+|fused|superseded, demoted|near-duplicates dropped): (.+)$"
)
_FILTERS = re.compile(r"^filters: (\d+ of \d+) chunks eligible \(SearchFilters\(.*\)\)$")
_ID_SCORE = re.compile(r"^(\S+#\d+)(?: ([\d.]+))?$")


def readable_trace(
    lines: Sequence[str],
    *,
    names: ChunkNames | None = None,
    filters: str = "",
    timings: Mapping[str, float] | None = None,
) -> list[str]:
    """Return the trace lines with one candidate a line, filters in words, timings once.

    Args:
        lines: The service's trace lines.
        names: Returns "Title > Section" for a chunk id ("" when unknown).
        filters: The active filters in words ("Staff Leave Policy, tag hr").
        timings: UI-side timings in seconds, added unless the service gave them.
    """
    out: list[str] = []
    for line in lines:
        out += _readable(line, names=names, filters=filters)
    for name, seconds in (timings or {}).items():
        if not any(line.startswith(f"{name}: ") for line in out):
            out.append(f"{name}: {seconds * 1000:.0f} ms")
    return _unique(out)


def reasoning_block(reasoning: str) -> str:
    """Return the model's reasoning as a collapsed HTML block ("" when there is none).

    The text is the model's own and may hold anything, so it is escaped; the block is
    one line (newlines as ``&#10;`` inside ``<pre>``) because a blank line would end the
    HTML block and let the rest render as Markdown.
    """
    text = reasoning.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        return ""
    words = len(text.split())
    body = html.escape(text, quote=True).replace("\n", "&#10;")
    summary = f"Model reasoning ({words} words, not part of the answer)"
    return f'<details class="reasoning"><summary>{summary}</summary><pre>{body}</pre></details>'


def _readable(line: str, *, names: ChunkNames | None, filters: str) -> list[str]:
    found = _FILTERS.match(line)
    if found:
        return [f"filters: {filters or 'none'} ({found[1]} chunks eligible)"]
    listed = _LIST_LINE.match(line)
    if not listed:
        return [line]
    rows = [f"  {_row(item.strip(), names)}" for item in listed[2].split(", ")]
    return [f"{listed[1]}:", *rows]


def _row(item: str, names: ChunkNames | None) -> str:
    found = _ID_SCORE.match(item)
    if not found or names is None:
        return item
    label = names(found[1])
    score = f" {found[2]}" if found[2] else ""
    return f"{found[1]}{score} — {label}" if label else item


def _unique(lines: list[str]) -> list[str]:
    seen: set[str] = set()
    kept = []
    for line in lines:
        # Candidate rows repeat across the dense, lexical and fused lists on purpose.
        if line.startswith("  ") or line not in seen:
            kept.append(line)
            seen.add(line)
    return kept
