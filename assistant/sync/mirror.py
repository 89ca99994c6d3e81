"""The mirror beside the index: one file per synced item and the state of each drive.

``INDEX/sharepoint/`` is the folder the ingest reads: ``DRIVE/ITEM-ID.EXT`` for
each file (named by id, so a rename or a move keeps the document's identity) and
``.sources.json`` with each file's title, web URL and audience. The hidden
``.state/DRIVE.json`` keeps the drive's delta link and what is known of every
item. Every file is replaced atomically (write, fsync, rename), so a crash leaves
either the old or the new version, and the state is written after the files it
describes.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

from assistant.documents.origin import SOURCES_FILE
from assistant.errors import StoreError

__all__ = ["DriveState", "Entry", "Mirror"]

logger = logging.getLogger(__name__)

_STATE = ".state"


@dataclass(frozen=True, slots=True)
class Entry:
    """What the mirror knows of one item; ``file`` is "" for folders and unsynced types."""

    name: str
    parent: str
    folder: bool = False
    ctag: str = ""
    url: str = ""
    file: str = ""
    audience: tuple[str, ...] = ()


@dataclass(slots=True)
class DriveState:
    """A drive's delta position and items: ``cursor`` is a page link to resume from."""

    delta_link: str = ""
    cursor: str = ""
    items: dict[str, Entry] = field(default_factory=dict)
    dirty: bool = False  # the mirror changed and the ingest has not caught up yet


class Mirror:
    """The mirror folder of one index."""

    def __init__(self, index_dir: Path) -> None:
        """Use ``INDEX/sharepoint``; nothing is created until something is written."""
        self.root = index_dir / "sharepoint"
        self.state_dir = self.root / _STATE

    def load(self, drive: str) -> DriveState:
        """Return a drive's state (empty for a drive never synced).

        Raises:
            StoreError: The state file exists but cannot be read.
        """
        path = self.state_dir / f"{drive}.json"
        if not path.exists():
            return DriveState()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            items = {
                key: Entry(**{**value, "audience": tuple(value.get("audience", ()))})
                for key, value in data["items"].items()
            }
            return DriveState(data["delta_link"], data["cursor"], items, bool(data["dirty"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"cannot read sync state {path}: {exc}") from exc

    def save(self, drive: str, state: DriveState) -> None:
        """Write a drive's state atomically."""
        data = {
            "delta_link": state.delta_link,
            "cursor": state.cursor,
            "dirty": state.dirty,
            "items": {key: asdict(entry) for key, entry in state.items.items()},
        }
        self._write(self.state_dir / f"{drive}.json", json.dumps(data).encode("utf-8"))

    def write_file(self, relative: str, data: bytes) -> None:
        """Replace one mirrored file."""
        self._write(self.root / relative, data)

    def has_file(self, relative: str) -> bool:
        """Return whether a mirrored file is on disk."""
        return (self.root / relative).is_file()

    def remove_file(self, relative: str) -> None:
        """Remove one mirrored file (gone already is fine)."""
        (self.root / relative).unlink(missing_ok=True)

    def drives(self) -> list[str]:
        """Return the drives that have a state file."""
        if not self.state_dir.is_dir():
            return []
        return sorted(p.stem for p in self.state_dir.glob("*.json"))

    def forget(self, drive: str) -> None:
        """Remove a drive no longer configured: its files and its state."""
        shutil.rmtree(self.root / drive, ignore_errors=True)
        (self.state_dir / f"{drive}.json").unlink(missing_ok=True)

    def remove_strays(self, drive: str, state: DriveState) -> int:
        """Remove files of ``drive`` its state does not name; return how many.

        A sync that died inside a page may have written files its saved state does
        not know yet: they would have no entry in the sources file, so no audience
        from SharePoint. They are removed (the resumed sync fetches them again).
        """
        known = {entry.file for entry in state.items.values() if entry.file}
        folder = self.root / drive
        strays = [
            path
            for path in (folder.iterdir() if folder.is_dir() else ())
            if f"{drive}/{path.name}" not in known
        ]
        for path in strays:
            path.unlink(missing_ok=True)
        return len(strays)

    def write_sources(self, states: dict[str, DriveState]) -> None:
        """Write the sources file the ingest reads: title, URL, audience of every file."""
        sources = {
            entry.file: {
                "title": Path(entry.name).stem,
                "url": entry.url,
                "audience": list(entry.audience) or ["everyone"],
            }
            for state in states.values()
            for entry in state.items.values()
            if entry.file
        }
        self._write(self.root / SOURCES_FILE, json.dumps(sources, sort_keys=True).encode("utf-8"))

    def _write(self, path: Path, data: bytes) -> None:
        temporary = path.with_name(f".{path.name}.partial")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with temporary.open("wb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
            temporary.replace(path)
        except OSError as exc:
            raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from exc
