"""A whole sync: every configured drive into the mirror, then the mirror into the index."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from assistant.config import Settings
from assistant.errors import SyncError
from assistant.index.ingest import IngestReport, ingest
from assistant.index.lock import writer_lock
from assistant.protocols import Embedder
from assistant.sync.auth import TokenSource
from assistant.sync.drive import DriveResult, sync_drive
from assistant.sync.graph import GraphClient, http_client
from assistant.sync.mirror import Mirror
from assistant.sync.settings import SyncConfig

__all__ = ["SyncReport", "sync_sources"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SyncReport:
    """The outcome of one sync: each drive's changes, the ingest, the Graph requests made."""

    drives: tuple[DriveResult, ...]
    ingest: IngestReport
    requests: tuple[tuple[str, int], ...]
    failures: tuple[str, ...]
    seconds: float


def sync_sources(
    config: SyncConfig,
    *,
    settings: Settings,
    embedder: Callable[[], Embedder],
    sleep: Callable[[float], None] = time.sleep,
) -> SyncReport:
    """Sync every drive of ``config`` into the index of ``settings``.

    A drive that fails is reported and the others are still ingested; the
    failed one resumes from its last saved page on the next run.

    Raises:
        IndexBusyError: Another sync (or an ingest) holds the index: this run is skipped.
        StoreError: The mirror or the index cannot be written.
    """
    started = time.perf_counter()
    mirror = Mirror(settings.store.path)
    with writer_lock(mirror.state_dir, wait=False):
        http = http_client(config)
        tokens = TokenSource(config, http=http)
        client = GraphClient(config, tokens.token, http=http, sleep=sleep)
        results: list[DriveResult] = []
        failures: list[str] = []
        try:
            for drive in config.drives:
                try:
                    results.append(
                        sync_drive(
                            drive,
                            client=client,
                            mirror=mirror,
                            anonymous_public=config.anonymous_links_public,
                        )
                    )
                except SyncError as exc:
                    logger.error("drive %s: %s", drive.name, exc)
                    failures.append(f"{drive.name}: {exc}")
        finally:
            client.close()
        report = _ingest_mirror(mirror, config, settings=settings, embedder=embedder())
    requests = tuple(sorted(client.requests.items()))
    return SyncReport(
        tuple(results), report, requests, tuple(failures), time.perf_counter() - started
    )


def _ingest_mirror(
    mirror: Mirror, config: SyncConfig, *, settings: Settings, embedder: Embedder
) -> IngestReport:
    configured = {drive.name for drive in config.drives}
    for name in mirror.drives():
        if name not in configured:
            logger.warning("drive %s is no longer configured: removing its documents", name)
            mirror.forget(name)
    states = {name: mirror.load(name) for name in mirror.drives()}
    for name, state in states.items():
        if mirror.remove_strays(name, state):
            logger.info("drive %s: removed files a failed sync left unrecorded", name)
    mirror.write_sources(states)
    # Every run ingests the whole mirror (cheap when nothing changed): an ingest that
    # died, or an index rebuilt since, is caught up without a flag to trust.
    report = ingest([mirror.root], settings=settings, embedder=embedder, wait=True)
    for name, state in states.items():
        if state.dirty:
            state.dirty = False
            mirror.save(name, state)
    return report
