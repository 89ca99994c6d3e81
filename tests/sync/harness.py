"""Sync a fake drive into a real index and compare it with a fresh ingest of the drive.

The oracle is independent of `assistant.sync`: it writes the fake's files and an
audience worked out from the fake's grants into a folder, ingests that into a new
index, and compares what a reader loads from both (chunks, titles, links, audiences).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from assistant.config import Settings, StoreSettings
from assistant.index.chroma import ChromaIndex
from assistant.index.ingest import ingest
from assistant.sync.run import SyncReport, sync_sources
from assistant.sync.settings import SyncConfig, load_config
from assistant.types import User
from tests.conftest import FakeEmbedder
from tests.support.graph_server import CLIENT_ID, SECRET, TENANT, FakeDrive, FakeGraph

SUPPORTED = {".md", ".txt", ".html"}


@dataclass(frozen=True, slots=True)
class Seen:
    """What a reader of an index sees: chunks, and each document's title, link and audience."""

    chunks: list[tuple[str, str]]
    docs: dict[str, tuple[str, str, tuple[str, ...] | None]]

    def audience(self, source: str) -> tuple[str, ...] | None:
        """Return the audience a document was stored with."""
        return self.docs[source][2]


class Harness:
    """One index synced from drives of a `FakeGraph`."""

    def __init__(self, graph: FakeGraph, folder: Path) -> None:
        self.graph = graph
        self.folder = folder
        self.embedder = FakeEmbedder()
        self.settings = replace(Settings(), store=StoreSettings(path=folder / "index"))
        self.drives: dict[str, FakeDrive] = {}
        self.runs = 0
        self.public = False  # anonymous links make a document public (a setting)

    def add_drive(self, name: str) -> FakeDrive:
        """Add a drive to the fake and to the configuration."""
        drive = self.graph.drive(f"b!{name}-{id(self)}")
        self.drives[name] = drive
        return drive

    def config(self, **extra: Any) -> SyncConfig:
        """Write and read the configuration file, as the command does."""
        (self.folder / "secret").write_text(SECRET + "\n", encoding="utf-8")
        lines = [
            f'tenant = "{TENANT}"',
            f'client_id = "{CLIENT_ID}"',
            'secret_file = "secret"',
            f'authority = "{self.graph.base}"',
            f'graph = "{self.graph.base}/v1.0"',
            f'ca_bundle = "{self.graph.ca_file}"',
            "max_retries = 2",
            "max_wait_seconds = 2",
            *(f"{key} = {json.dumps(value)}" for key, value in extra.items()),
        ]
        for name, drive in self.drives.items():
            lines += ["[[drives]]", f'name = "{name}"', f'id = "{drive.drive_id}"']
        path = self.folder / "sharepoint.toml"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return load_config(path, {})

    def sync(self, *, sleep: Callable[[float], None] = time.sleep, **extra: Any) -> SyncReport:
        """Run one sync of every drive (``sleep`` waits out Retry-After and back-off)."""
        self.runs += 1
        return sync_sources(
            self.config(**extra),
            settings=self.settings,
            embedder=lambda: self.embedder,
            sleep=sleep,
        )

    def indexed(self, settings: Settings | None = None) -> Seen:
        """Return what a reader of the index sees: chunks and each document's metadata."""
        settings = settings or self.settings
        index = ChromaIndex(
            settings.store,
            embedder_identity=self.embedder.identity,
            dimension=self.embedder.dimension,
        )
        snapshot = index.load_snapshot()
        return Seen(
            sorted((c.chunk_id, c.text) for c in snapshot.chunks),
            {s: (m.title, m.url, m.audience) for s, m in sorted(snapshot.docs.items())},
        )

    def fresh(self) -> Seen:
        """Ingest the fake's current state into a new index; return what a reader sees."""
        self.runs += 1
        root = self.folder / f"fresh-{self.runs}"
        sources: dict[str, object] = {}
        for name, drive in self.drives.items():
            for item in drive.files().values():
                suffix = PurePosixPath(item.name).suffix.lower()
                if suffix not in SUPPORTED:
                    continue
                relative = f"{name}/{item.item_id}{suffix}"
                (root / name).mkdir(parents=True, exist_ok=True)
                (root / relative).write_bytes(item.content)
                sources[relative] = {
                    "title": PurePosixPath(item.name).stem,
                    "url": f"https://contoso.sharepoint.example/sites/policies/Shared%20Documents/"
                    f"{drive.path_of(item.item_id)}",
                    "audience": list(expected_audience(drive, item.item_id, public=self.public))
                    or ["everyone"],
                }
        root.mkdir(parents=True, exist_ok=True)
        (root / ".sources.json").write_text(json.dumps(sources), encoding="utf-8")
        settings = replace(
            self.settings, store=StoreSettings(path=self.folder / f"fresh-index-{self.runs}")
        )
        ingest([root], settings=settings, embedder=self.embedder)
        return self.indexed(settings)


def expected_audience(drive: FakeDrive, item_id: str, *, public: bool) -> tuple[str, ...]:
    """The audience the fake's grants should make, worked out without assistant.sync."""
    names: set[str] = set()
    for grant in drive.effective_grants(item_id):
        scope = grant.get("link", {}).get("scope", "")
        if scope == "anonymous" and public:
            return ()
        if scope == "organization":
            names.add("signed-in")
        who = grant.get("grantedToV2", {})
        if "user" in who:
            names.add(who["user"]["email"].lower())
        if "group" in who:
            names.add(re.sub(r"[^a-z0-9]+", "-", who["group"]["displayName"].lower()).strip("-"))
    return tuple(sorted(names)) or ("admin",)


def allowed(drive: FakeDrive, item_id: str, person: User, *, public: bool = False) -> bool:
    """Whether the fake's grants let ``person`` read the item (admins read all)."""
    if "admin" in person.groups:
        return True
    for grant in drive.effective_grants(item_id):
        if grant.get("link", {}).get("scope") == "anonymous" and public:
            return True
        if grant.get("link", {}).get("scope") == "organization" and person.name != "anonymous":
            return True
        who = grant.get("grantedToV2", {})
        if "user" in who and who["user"]["email"].lower() == person.name.lower():
            return True
        if "group" in who:
            slug = re.sub(r"[^a-z0-9]+", "-", who["group"]["displayName"].lower()).strip("-")
            if slug in person.groups:
                return True
    return False
