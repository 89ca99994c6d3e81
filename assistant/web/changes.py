"""The chat's view of the change list: the "Recent policy changes" panel and "updated on".

`ChangeFeed` rereads ``INDEX/changes.jsonl`` only when the file changed, so
every answer can ask whether a cited section changed lately.

The index's first ingest records every document as "added"; that is when the
documents were indexed, not when they changed. So the panel sums it up in one
"indexed" line, and "updated on" comes only from a later ingest, and only when
the document's own date does not say it is older than the index (issue 30, item 5).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from assistant.index.changes import changes_path, read_changes
from assistant.types import HEADING_SEPARATOR, DocumentChange, Hit, User
from assistant.web.format import escape_markdown

__all__ = ["ChangeFeed", "recent_changes_markdown", "visible_changes"]

MAX_PANEL_ENTRIES = 20
Today = Callable[[], dt.date]


def _today() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


class ChangeFeed:
    """The changes of the last ``days`` days recorded beside the index at ``index``."""

    def __init__(self, index: Path, *, days: int, today: Today = _today) -> None:
        self._path = changes_path(index)
        self._index = index
        self.days = days
        self._today = today
        self._lock = threading.Lock()
        self._seen: tuple[float, int] | None = None
        self._changes: list[DocumentChange] = []

    def recent(self) -> list[DocumentChange]:
        """Return the changes of the last ``days`` days, oldest first."""
        since = (self._today() - dt.timedelta(days=self.days)).isoformat()
        return [c for c in self._all() if c.time >= since]

    def _all(self) -> list[DocumentChange]:
        try:
            stat = self._path.stat()
            seen: tuple[float, int] | None = (stat.st_mtime, stat.st_size)
        except OSError:
            seen = None
        with self._lock:
            if seen != self._seen:
                self._changes = read_changes(self._index) if seen else []
                self._seen = seen
            return self._changes

    def first_ingest(self) -> str:
        """Return when the index's first recorded ingest ran (ISO time), or "" if none."""
        changes = self._all()
        return changes[0].time if changes else ""

    def updated_on(self, hit: Hit) -> str:
        """Return the date the hit's section was added or edited lately, or "".

        Changes of the first ingest are the documents being indexed, not updated; and
        a document whose own date is older than the first ingest did not say it changed.
        """
        first = self.first_ingest()
        if hit.effective_date and hit.effective_date < first[:10]:
            return ""
        path = HEADING_SEPARATOR.join(hit.chunk.heading_path)
        date = ""
        for change in self.recent():
            if change.source != hit.chunk.source or _indexed(change, first):
                continue
            if path in change.sections_edited or path in change.sections_added:
                date = max(date, change.time[:10])
        return date


def visible_changes(
    changes: Sequence[DocumentChange], *, readable: set[str], user: User
) -> list[DocumentChange]:
    """Return the changes ``user`` may see in the panel.

    A change is listed only if the user can read its document now (``readable``)
    and could read it before and after that change: section names from a
    restricted era stay restricted once the document is published (round three,
    finding D8). Administrators also see removals.
    """
    return [
        c
        for c in changes
        if (c.source in readable and c.readable_by(user))
        or (user.is_admin and c.change == "removed")
    ]


def recent_changes_markdown(
    changes: Sequence[DocumentChange], *, days: int, first: str = ""
) -> str:
    """Return the panel's Markdown: newest change first, one line per document.

    Documents the first ingest (at ``first``) added are summed up in one "indexed" line.
    """
    indexed = [c for c in changes if _indexed(c, first)]
    changed = [c for c in changes if not _indexed(c, first)]
    lines = []
    if not changed:
        lines.append(f"No policy changed in the last {days} days.")
    for change in list(reversed(changed))[:MAX_PANEL_ENTRIES]:
        title = escape_markdown(change.title or change.source)
        detail = _detail(change)
        lines.append(f"- **{change.time[:10]}** {title}: {change.change}{detail}")
    if indexed:
        count = f"{len(indexed)} document{'s' if len(indexed) != 1 else ''}"
        lines.append(f"\n{count} indexed on {first[:10]} (the first ingest; not changes).")
    return "\n".join(lines)


def _indexed(change: DocumentChange, first: str) -> bool:
    """Return whether ``change`` is a document the index's first ingest (at ``first``) added."""
    return change.change == "added" and change.time == first


def _detail(change: DocumentChange) -> str:
    parts = []
    if change.change == "edited":
        if change.old_version != change.new_version:
            parts.append(
                f"version {escape_markdown(change.old_version or '-')} → "
                f"{escape_markdown(change.new_version or '-')}"
            )
        if change.old_effective_date != change.new_effective_date:
            parts.append(f"effective {escape_markdown(change.new_effective_date or '-')}")
        for label, paths in (
            ("edited", change.sections_edited),
            ("new", change.sections_added),
            ("removed", change.sections_removed),
        ):
            if paths:
                names = ", ".join(
                    escape_markdown(p.split(HEADING_SEPARATOR)[-1]) for p in paths[:5]
                )
                more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
                parts.append(f"{label}: {names}{more}")
    elif change.change == "added" and change.new_effective_date:
        parts.append(f"effective {escape_markdown(change.new_effective_date)}")
    return f" ({'; '.join(parts)})" if parts else ""
