"""What each ingest changed, per document and section: the change list beside the index.

The ingest that writes the index is the only writer here. ``INDEX/sections.json``
keeps, per document, its title, version, effective date and a hash of each
section's text by heading path; ``INDEX/changes.jsonl`` gets one line per
document an ingest added, edited or removed (sections added, removed and
edited, old and new effective date and version). A document re-chunked with
the same sections and dates (a pipeline upgrade) is no change. A document the
index held before change tracking existed has no section record: its first
edit is listed without section detail. Failing to write these files costs a
warning, never the ingest; so does a failed webhook.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from assistant.types import ChangeKind, Document, DocumentChange

__all__ = [
    "SectionState",
    "changes_path",
    "post_changes",
    "read_changes",
    "record_changes",
    "section_state",
    "shown_url",
    "webhook_payload",
]

logger = logging.getLogger(__name__)

SectionState = dict[str, Any]
WEBHOOK_TIMEOUT_S = 10.0
_SPACES = str.split


def changes_path(index: Path) -> Path:
    """Return the change list of the index at ``index``."""
    return index / "changes.jsonl"


def _state_path(index: Path) -> Path:
    return index / "sections.json"


def _pending_path(index: Path) -> Path:
    return index / "changes.pending.json"


def write_pending(
    index: Path,
    written: Mapping[str, SectionState],
    *,
    added: Iterable[str],
    removed: Iterable[str],
    time: str,
) -> None:
    """Note what an ingest is about to commit, before the commit (finding D11).

    An ingest killed between its commit and `record_changes` would otherwise lose
    those changes for good: the next run finds the documents already stored.
    `recover_pending` records a note left behind; `record_changes` removes it.
    """
    note = {"written": dict(written), "added": list(added), "removed": list(removed), "time": time}
    path = _pending_path(index)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(note, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        logger.warning("cannot note the pending changes in %s: %s", index, exc)


def recover_pending(index: Path) -> list[DocumentChange]:
    """Record the changes a killed ingest noted and never recorded; return them."""
    path = _pending_path(index)
    try:
        note = json.loads(path.read_text(encoding="utf-8"))
        written, added, removed = note["written"], note["added"], note["removed"]
        time = str(note["time"])
    except FileNotFoundError:
        return []
    except (OSError, ValueError, TypeError, KeyError) as exc:
        logger.warning("cannot read %s (%s): its changes are not listed", path, exc)
        path.unlink(missing_ok=True)
        return []
    logger.info("recording the changes of an ingest that stopped before listing them")
    return record_changes(index, written, added=added, removed=removed, time=time)


def section_state(document: Document) -> SectionState:
    """Return what the change list compares of ``document``: dates, version, section hashes."""
    sections: dict[str, str] = {}
    for section in document.sections:
        text = " ".join(
            " ".join(_SPACES(document.text[b.char_start : b.char_end])) for b in section.blocks
        )
        path = section.breadcrumb
        name, n = path, 1
        while name in sections:  # two sections under one heading path
            n += 1
            name = f"{path} ({n})"
        sections[name] = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return {
        "title": document.meta.title or document.source,
        "version": document.meta.version,
        "effective_date": document.meta.effective_date,
        "sections": sections,
        "audience": list(document.meta.audience or ()),
    }


def record_changes(
    index: Path,
    written: Mapping[str, SectionState],
    *,
    added: Iterable[str],
    removed: Iterable[str],
    time: str,
) -> list[DocumentChange]:
    """Compare what an ingest wrote and removed with the last record; append the changes.

    Args:
        index: The index directory.
        written: The section state of every document written, by source.
        added: The sources that were new to the index.
        removed: The sources the ingest deleted.
        time: When the ingest ran (ISO 8601, UTC).

    Returns:
        The changes, in source order (also when the files could not be written).
    """
    states = _read_states(index)
    new_sources = set(added)
    changes = []
    for source in sorted(written):
        change = _compare(source, states.get(source), written[source], time=time)
        if change is not None:
            if source in new_sources and change.change == "edited" and source not in states:
                change = _added(source, written[source], time=time)
            changes.append(change)
        states[source] = written[source]
    for source in sorted(set(removed)):
        old = states.pop(source, None) or {}
        changes.append(
            DocumentChange(
                time=time,
                source=source,
                title=str(old.get("title", source)),
                change="removed",
                sections_removed=tuple(old.get("sections", {})),
                old_effective_date=str(old.get("effective_date", "")),
                old_version=str(old.get("version", "")),
                old_audience=_audience(old),
                new_audience=_audience(old),
            )
        )
    _write(index, states, changes)
    return changes


def _added(source: str, new: SectionState, *, time: str) -> DocumentChange:
    return DocumentChange(
        time=time,
        source=source,
        title=new["title"],
        change="added",
        sections_added=tuple(new["sections"]),
        new_effective_date=new["effective_date"],
        new_version=new["version"],
        old_audience=_audience(new),
        new_audience=_audience(new),
    )


def _audience(state: SectionState) -> tuple[str, ...]:
    """Return the audience a section record names; one recorded before audiences: admin."""
    groups = state.get("audience")
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        return ("admin",)
    return tuple(groups)


def _compare(
    source: str, old: SectionState | None, new: SectionState, *, time: str
) -> DocumentChange | None:
    if old is None:
        # New to the index, or stored before change tracking: no section detail either way.
        return DocumentChange(
            time=time,
            source=source,
            title=new["title"],
            change="edited",
            new_effective_date=new["effective_date"],
            new_version=new["version"],
            old_audience=("admin",),  # unknown: fail closed
            new_audience=_audience(new),
        )
    before, after = old.get("sections", {}), new["sections"]
    kind: ChangeKind = "edited"
    change = DocumentChange(
        time=time,
        source=source,
        title=new["title"],
        change=kind,
        sections_added=tuple(p for p in after if p not in before),
        sections_removed=tuple(p for p in before if p not in after),
        sections_edited=tuple(p for p in after if p in before and before[p] != after[p]),
        old_effective_date=str(old.get("effective_date", "")),
        new_effective_date=new["effective_date"],
        old_version=str(old.get("version", "")),
        new_version=new["version"],
        old_audience=_audience(old),
        new_audience=_audience(new),
    )
    same_meta = (
        change.old_effective_date == change.new_effective_date
        and change.old_version == change.new_version
        and old.get("title") == new["title"]
    )
    moved = change.sections_added or change.sections_removed or change.sections_edited
    return None if same_meta and not moved else change


def _read_states(index: Path) -> dict[str, SectionState]:
    path = _state_path(index)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        logger.warning("cannot read %s (%s): the change list starts afresh", path, exc)
        return {}
    return raw if isinstance(raw, dict) else {}


def _write(index: Path, states: Mapping[str, SectionState], changes: list[DocumentChange]) -> None:
    path = _state_path(index)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        index.mkdir(parents=True, exist_ok=True)
        if changes:
            with changes_path(index).open("a+", encoding="utf-8") as out:
                if out.tell() and _ends_cut_short(changes_path(index)):
                    out.write("\n")  # a line cut short by a crash must not swallow this one
                for change in changes:
                    out.write(json.dumps(asdict(change), ensure_ascii=False) + "\n")
        tmp.write_text(json.dumps(states, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)
        _pending_path(index).unlink(missing_ok=True)
    except OSError as exc:
        logger.warning("cannot record what this ingest changed in %s: %s", index, exc)


def _ends_cut_short(path: Path) -> bool:
    with path.open("rb") as raw:
        raw.seek(-1, os.SEEK_END)
        return raw.read(1) != b"\n"


def read_changes(index: Path, *, since: str = "") -> list[DocumentChange]:
    """Return the recorded changes from ``since`` (ISO date or time) on, oldest first."""
    path = changes_path(index)
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return []
    except OSError as exc:
        logger.warning("cannot read the change list %s: %s", path, exc)
        return []
    changes, skipped = [], 0
    for line in lines:
        change = _change_of(line)
        if change is None:
            skipped += 1  # a line cut short by a full disk or a crash, or damaged
        elif change.time >= since:
            changes.append(change)
    if skipped:
        logger.warning("%d unreadable lines in the change list %s were skipped", skipped, path)
    return changes


def _change_of(line: bytes) -> DocumentChange | None:
    """Return the change one line of the list records, or None when it is not one."""
    try:
        raw = json.loads(line.decode("utf-8"))
        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
        change = DocumentChange(**fields)
    except (ValueError, TypeError, AttributeError):
        return None
    return change if isinstance(change.time, str) else None


def post_changes(url: str, changes: Iterable[DocumentChange]) -> str:
    """POST the public changes as ``{"changes": [...]}`` JSON to ``url``; return an error or "".

    A webhook usually announces to a whole channel, so only changes of documents
    everyone could read before and after are sent (each with its ``old_audience``
    and ``new_audience``, both empty); a restricted document's title and headings
    never leave. Errors name the URL's scheme and host only: the rest of a webhook
    URL is usually its secret.
    """
    payload = webhook_payload(changes)
    if not payload["changes"]:
        return ""
    body = json.dumps(payload, ensure_ascii=False).encode()
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT_S) as response:
            status = int(response.status)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return f"the change webhook {shown_url(url)} failed: {_without(str(exc), url)}"
    return "" if 200 <= status < 300 else f"the change webhook {shown_url(url)} answered {status}"


def webhook_payload(changes: Iterable[DocumentChange]) -> dict[str, list[dict[str, Any]]]:
    """Return the webhook's body: the changes of documents public before and after."""
    return {"changes": [asdict(c) for c in changes if c.public]}


def shown_url(url: str) -> str:
    """Return ``url`` as logs may show it: scheme and host, the rest (the secret) cut."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme or '?'}://{host}{port}/…"


def _without(text: str, url: str) -> str:
    """Return ``text`` with the URL's path, query and user info cut out (errors may echo them)."""
    parts = urllib.parse.urlsplit(url)
    for secret in (url, parts.path, parts.query, parts.fragment, parts.username, parts.password):
        if secret and len(secret) > 1:
            text = text.replace(secret, "…")
    return text
