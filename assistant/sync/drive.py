"""One drive's delta feed walked into the mirror, exactly.

Each page's changes are written to the mirror before the position after it is
saved, so a run that dies (a dropped connection past the retries, a crash)
resumes from the last saved page and loses nothing. ``410 Gone`` starts a full
enumeration; what it does not list is pruned. A file's content is downloaded
only when its ``cTag`` changed; its permissions are read when it is new, moved,
changed, or when its sharing (or a folder's above it) changed, and in a full
enumeration (first sync, 410), whose listing flags no sharing change.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from assistant.documents.loading import SUPPORTED_SUFFIXES
from assistant.sync.graph import DriveItem, GraphClient, ResyncRequired
from assistant.sync.mirror import DriveState, Entry, Mirror
from assistant.sync.permissions import audience_of
from assistant.sync.settings import Drive

__all__ = ["DriveResult", "sync_drive"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DriveResult:
    """What one drive's sync changed in the mirror."""

    drive: str
    downloaded: int
    relabelled: int
    removed: int
    resynced: bool


@dataclass(slots=True)
class _Walk:
    drive: Drive
    client: GraphClient
    mirror: Mirror
    state: DriveState
    anonymous_public: bool
    full: bool = False
    seen: set[str] = field(default_factory=set)
    shared_folders: set[str] = field(default_factory=set)
    downloaded: int = 0
    relabelled: int = 0
    removed: int = 0


def sync_drive(
    drive: Drive, *, client: GraphClient, mirror: Mirror, anonymous_public: bool
) -> DriveResult:
    """Bring ``drive``'s part of the mirror up to date with its delta feed.

    Raises:
        SyncError: Graph failed past the retries; the mirror keeps what was done.
        StoreError: The mirror cannot be written.
    """
    state = mirror.load(drive.name)
    walk = _Walk(drive, client, mirror, state, anonymous_public)
    resynced = False
    try:
        _walk(walk)
    except ResyncRequired:
        logger.warning("drive %s: the delta link expired; enumerating it again", drive.name)
        state.delta_link = state.cursor = ""
        walk = _Walk(drive, client, mirror, state, anonymous_public)
        resynced = True
        _walk(walk)
    return DriveResult(drive.name, walk.downloaded, walk.relabelled, walk.removed, resynced)


def _walk(walk: _Walk) -> None:
    state = walk.state
    resumed = bool(state.cursor)
    walk.full = not (state.cursor or state.delta_link)
    _round(walk, state.cursor or state.delta_link)
    if resumed:
        # A resumed round ends at the position of when it began: what changed since
        # (while the last run was down) is one more round away.
        walk.full = False
        _round(walk, state.delta_link)


def _round(walk: _Walk, link: str) -> None:
    """Follow one round of the feed, from ``link`` ("" : a full listing) to its delta link."""
    state = walk.state
    while True:
        page = walk.client.delta(walk.drive.drive_id, link)
        for item in page.items:
            walk.seen.add(item.item_id)
            _apply(walk, item)
        if page.next_link:
            link = page.next_link
            # A full enumeration is only whole at its end: its pages are no place to resume.
            state.cursor = "" if walk.full else link
            walk.mirror.save(walk.drive.name, state)
            continue
        break
    if walk.full:
        for item_id in [i for i in state.items if i not in walk.seen]:
            _remove(walk, item_id)
    _relabel_shared(walk)
    state.delta_link, state.cursor = page.delta_link, ""
    walk.mirror.save(walk.drive.name, state)


def _apply(walk: _Walk, item: DriveItem) -> None:
    state = walk.state
    if item.deleted:
        _remove(walk, item.item_id)
        return
    before = state.items.get(item.item_id)
    if item.is_folder:
        state.items[item.item_id] = Entry(item.name, item.parent_id, folder=True)
        moved = before is not None and before.parent != item.parent_id
        if item.sharing_changed or moved:
            walk.shared_folders.add(item.item_id)
        return
    suffix = PurePosixPath(item.name).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        if before is not None and before.file:
            _drop_file(walk, before)
        state.items[item.item_id] = Entry(item.name, item.parent_id, ctag=item.ctag)
        return
    _apply_file(walk, item, before, relative=f"{walk.drive.name}/{item.item_id}{suffix}")


def _apply_file(walk: _Walk, item: DriveItem, before: Entry | None, *, relative: str) -> None:
    mirror, state = walk.mirror, walk.state
    fresh = (
        before is None
        or before.file != relative
        or before.ctag != item.ctag
        or not mirror.has_file(relative)
    )
    if fresh:
        if before is not None and before.file and before.file != relative:
            mirror.remove_file(before.file)
        state.dirty = True
        mirror.write_file(relative, walk.client.content(walk.drive.drive_id, item.item_id))
        walk.downloaded += 1
    audience = before.audience if before is not None else ()
    # A full listing flags no sharing change: after a 410 every file's grants are read again.
    moved = before is None or before.parent != item.parent_id
    if fresh or walk.full or item.sharing_changed or moved:
        audience = _audience(walk, item.item_id)
    entry = Entry(item.name, item.parent_id, ctag=item.ctag, url=item.web_url, file=relative)
    entry = replace(entry, audience=audience)
    if before is not None and not fresh and before != entry:
        state.dirty = True
        walk.relabelled += 1
    state.items[item.item_id] = entry


def _audience(walk: _Walk, item_id: str) -> tuple[str, ...]:
    grants = walk.client.permissions(walk.drive.drive_id, item_id)
    return audience_of(grants, anonymous_public=walk.anonymous_public)


def _relabel_shared(walk: _Walk) -> None:
    """Read again the permissions of every file below a folder whose sharing changed."""
    if not walk.shared_folders:
        return
    state = walk.state
    for item_id, entry in list(state.items.items()):
        if entry.file and _below(state, entry, walk.shared_folders):
            audience = _audience(walk, item_id)
            if audience != entry.audience:
                state.items[item_id] = replace(entry, audience=audience)
                state.dirty = True
                walk.relabelled += 1


def _below(state: DriveState, entry: Entry, folders: set[str]) -> bool:
    parent, hops = entry.parent, 0
    while parent and hops < 10_000:  # a cycle in a corrupt state must not hang the sync
        if parent in folders:
            return True
        above = state.items.get(parent)
        parent, hops = (above.parent if above is not None else ""), hops + 1
    return False


def _remove(walk: _Walk, item_id: str) -> None:
    state = walk.state
    entry = state.items.pop(item_id, None)
    if entry is None:
        return
    if entry.file:
        _drop_file(walk, entry)
    if entry.folder:
        # Graph may report only the folder: everything below it is gone too.
        for child in [i for i, e in state.items.items() if e.parent == item_id]:
            _remove(walk, child)


def _drop_file(walk: _Walk, entry: Entry) -> None:
    walk.mirror.remove_file(entry.file)
    walk.state.dirty = True
    walk.removed += 1
