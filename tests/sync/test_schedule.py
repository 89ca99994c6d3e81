"""``--every``: runs on a grid, never stacked; a busy index skips a run, a failure goes on."""

from __future__ import annotations

import io
import threading

import pytest

from assistant.cli.search import main
from assistant.errors import ConfigError, IndexBusyError, SyncError
from assistant.index.lock import writer_lock
from assistant.sync.mirror import Mirror
from assistant.sync.schedule import parse_interval, run_every
from tests.conftest import FakeEmbedder
from tests.sync.harness import Harness


def test_durations_read_as_people_write_them() -> None:
    assert [parse_interval(t) for t in ("15m", "1h", "90", "30s", "1d")] == [
        900,
        3600,
        90,
        30,
        86400,
    ]
    for bad in ("", "soon", "5s", "-1m"):
        with pytest.raises(ConfigError):
            parse_interval(bad)


def test_a_run_longer_than_the_interval_skips_the_runs_due_meanwhile() -> None:
    now = [0.0]
    started: list[float] = []
    waits: list[float] = []
    stop = threading.Event()
    durations = iter([1.0, 25.0, 2.0, 1.0])

    def job() -> None:
        started.append(now[0])
        now[0] += next(durations)
        if len(started) == 2:
            raise SyncError("Graph is down")
        if len(started) == 3:
            raise IndexBusyError("another sync holds the index")
        if len(started) == 4:
            stop.set()

    def wait(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    failed = run_every(10.0, job, stop=stop, clock=lambda: now[0], wait=wait)

    assert started == [0.0, 10.0, 40.0, 50.0]  # 20 and 30 fell due during the long run
    assert failed == 1  # the busy index is a skip, not a failure
    assert waits[:3] == [9.0, 5.0, 8.0]


def test_a_sync_while_another_holds_the_index_is_refused_with_exit_3(harness: Harness) -> None:
    harness.add_drive("hr")
    harness.config()
    argv = ["sync", "sharepoint", "--config", str(harness.folder / "sharepoint.toml")]
    argv += ["--index", str(harness.settings.store.path)]
    err = io.StringIO()
    with writer_lock(Mirror(harness.settings.store.path).state_dir, wait=False):
        code = main(
            argv, stdout=io.StringIO(), stderr=err, embedder_factory=lambda _: FakeEmbedder()
        )
    assert code == 3
    assert "another ingest" in err.getvalue()
