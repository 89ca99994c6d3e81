"""What goes wrong between us and Graph: expired links, throttling, dropped connections, crashes."""

from __future__ import annotations

import io
import json
import logging
import time

import pytest

from assistant.cli.search import main
from tests.conftest import FakeEmbedder
from tests.support.graph_server import SECRET, group, link
from tests.sync.harness import Harness


def policy(n: int) -> bytes:
    return f"# Policy {n}\n\nRule {n}: staff file claim {n} within {n + 3} days.\n".encode()


def test_an_expired_delta_link_resyncs_and_prunes_what_is_gone(harness: Harness) -> None:
    drive = harness.add_drive("hr")
    ids = [drive.add_file(f"P{n}.md", policy(n), grants=[group("HR")]) for n in range(5)]
    harness.sync()
    drive.delete(ids[0])
    drive.edit(ids[1], policy(100))
    drive.add_file("New.md", policy(7), grants=[link("organization")])
    drive.expire_links()

    report = harness.sync()

    assert report.drives[0].resynced
    assert report.drives[0].downloaded == 2  # the edited and the new file, no others
    assert harness.indexed() == harness.fresh()


@pytest.mark.slow
def test_throttling_is_waited_out_as_graph_asks(harness: Harness) -> None:
    drive = harness.add_drive("hr")
    for n in range(4):
        drive.add_file(f"P{n}.md", policy(n), grants=[group("HR")])
    harness.graph.fail("429", retry_after=1)
    harness.graph.fail("503", retry_after=0)

    started = time.monotonic()
    report = harness.sync()

    assert time.monotonic() - started >= 1.0
    assert report.failures == ()
    assert harness.indexed() == harness.fresh()


def test_a_connection_dropped_mid_page_loses_nothing(harness: Harness) -> None:
    drive = harness.add_drive("hr")
    for n in range(7):
        drive.add_file(f"P{n}.md", policy(n), grants=[group("HR")])
    harness.graph.fail("pass", times=3)
    harness.graph.fail("drop")

    report = harness.sync()

    assert report.failures == ()
    assert harness.indexed() == harness.fresh()


def test_a_sync_that_dies_mid_feed_resumes_from_its_last_page(harness: Harness) -> None:
    drive = harness.add_drive("hr")
    ids = [drive.add_file(f"P{n}.md", policy(n), grants=[group("HR")]) for n in range(4)]
    harness.sync()
    for n in range(4):
        drive.edit(ids[n], policy(50 + n))
    drive.delete(ids[3])
    extra = [drive.add_file(f"Q{n}.md", policy(60 + n), grants=[group("HR")]) for n in range(3)]
    # The first page and its files go through; then Graph fails past the retries.
    harness.graph.fail("pass", times=7)
    harness.graph.fail("500", times=3)
    waits: list[float] = []

    failed = harness.sync(sleep=waits.append)

    assert len(failed.failures) == 1
    assert "500" in failed.failures[0]
    assert waits == [0.5, 1.0]  # backed off twice (max_retries = 2), then gave up
    # Changed while the sync was down: after its resumed round, one more round fetches it.
    drive.add_file("Late.md", policy(70), grants=[group("HR")])
    harness.graph.reset_counts()
    report = harness.sync()
    assert report.failures == ()
    assert harness.indexed() == harness.fresh()
    assert harness.graph.counts["content"] < 4 + len(extra)  # the first page was not redone


def test_an_unchanged_drive_makes_only_delta_requests(harness: Harness) -> None:
    drive = harness.add_drive("hr")
    for n in range(10):
        drive.add_file(f"P{n}.md", policy(n), grants=[group("HR")])
    harness.sync()
    harness.graph.reset_counts()

    report = harness.sync()

    assert dict(report.requests) == {"content": 0, "delta": 1, "permissions": 0}
    assert harness.graph.counts["content"] == harness.graph.counts["permissions"] == 0
    assert len(report.ingest.unchanged) == 10
    assert report.ingest.added == report.ingest.changed == ()


def test_the_command_syncs_and_never_shows_the_secret(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    drive = harness.add_drive("hr")
    drive.add_file("Leave.md", policy(1), grants=[group("HR")])
    config = harness.config()
    del config
    path = str(harness.folder / "sharepoint.toml")
    out, err = io.StringIO(), io.StringIO()
    argv = ["sync", "sharepoint", "--config", path, "--index", str(harness.folder / "cli-index")]
    caplog.set_level(logging.DEBUG)

    code = main(
        [*argv, "--json"], stdout=out, stderr=err, embedder_factory=lambda _: FakeEmbedder()
    )

    assert code == 0, err.getvalue()
    result = json.loads(out.getvalue())
    assert result["added"] == 1
    assert result["drives"][0]["downloaded"] == 1
    (harness.folder / "secret").write_text("wrong-secret", encoding="utf-8")
    code = main(argv, stdout=out, stderr=err, embedder_factory=lambda _: FakeEmbedder())
    assert code == 1
    assert "invalid_client" in err.getvalue()
    shown = out.getvalue() + err.getvalue() + caplog.text
    assert SECRET not in shown
    assert "wrong-secret" not in shown


def test_a_secret_on_the_command_line_or_in_the_file_is_refused(harness: Harness) -> None:
    harness.add_drive("hr")
    harness.config()
    path = harness.folder / "sharepoint.toml"
    path.write_text('client_secret = "x"\n' + path.read_text(), encoding="utf-8")
    err = io.StringIO()
    code = main(["sync", "sharepoint", "--config", str(path)], stderr=err, stdout=io.StringIO())
    assert code == 2
    assert "secret_file" in err.getvalue()
    code = main(["sync", "sharepoint", "--secret", "x"], stderr=io.StringIO())
    assert code == 2
