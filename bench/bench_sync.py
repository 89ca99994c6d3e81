"""A re-sync of an unchanged SharePoint drive against its first sync; prints figures (not a test).

Usage: ``PYTHONPATH=. python bench/bench_sync.py [--docs 500] [--kb 2] [--fake-embedder]``

A fake Graph (``tests/support/graph_server.py``, TLS on 127.0.0.1, 200 items a page
as Graph serves) holds ``--docs`` policy-like Markdown files (``bench/corpus.py``,
fixed seed) in three folders with group, user and organisation grants. The first
``sync_sources`` downloads, reads permissions, ingests and embeds everything (the
packaged MiniLM; ``--fake-embedder``: hashed words, a much faster first sync and so
a stricter ratio); the second finds nothing changed. Prints both times, the share,
and the Graph requests of each (issue 37's target: the second makes only delta
requests and takes <= 5 % of the first).
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from corpus import policy_markdown

from assistant.config import Settings, StoreSettings
from assistant.embeddings.factory import make_embedder
from assistant.protocols import Embedder
from assistant.sync.run import SyncReport, sync_sources
from assistant.sync.settings import load_config
from tests.conftest import FakeEmbedder
from tests.support.graph_server import CLIENT_ID, SECRET, TENANT, FakeGraph, group, link, user


def _drive(graph: FakeGraph, docs: int, kb: float) -> str:
    drive = graph.drive("b!bench")
    grants = ([group("HR")], [link("organization")], [group("Finance Team")])
    folders = [drive.add_folder(f"F{n}", grants=list(g)) for n, g in enumerate(grants)]
    rng = random.Random(0)
    for n in range(docs):
        text = policy_markdown(rng, target_bytes=int(kb * 1000), title=f"Policy {n}")
        own = [user(f"u{n % 7}@contoso.example")] if n % 5 == 0 else []
        drive.add_file(f"Policy {n}.md", text.encode(), parent=folders[n % 3], grants=own)
    return drive.drive_id


def _config(graph: FakeGraph, folder: Path, drive_id: str) -> Path:
    (folder / "secret").write_text(SECRET, encoding="utf-8")
    path = folder / "sharepoint.toml"
    path.write_text(
        f'tenant = "{TENANT}"\nclient_id = "{CLIENT_ID}"\nsecret_file = "secret"\n'
        f'authority = "{graph.base}"\ngraph = "{graph.base}/v1.0"\n'
        f'ca_bundle = "{graph.ca_file}"\n[[drives]]\nname = "bench"\nid = "{drive_id}"\n',
        encoding="utf-8",
    )
    return path


def _line(name: str, report: SyncReport) -> str:
    requests = ", ".join(f"{k} {v}" for k, v in report.requests)
    ingest = sum(seconds for _, seconds in report.ingest.timings)
    return (
        f"{name}: {report.seconds:8.2f} s (ingest stages {ingest:.2f} s) "
        f"added {len(report.ingest.added)}, unchanged {len(report.ingest.unchanged)}; "
        f"Graph requests: {requests}"
    )


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--kb", type=float, default=2.0)
    parser.add_argument("--fake-embedder", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeGraph.started(Path(tmp), page_size=200) as graph:
        folder = Path(tmp)
        config = load_config(_config(graph, folder, _drive(graph, args.docs, args.kb)), {})
        settings = replace(Settings(), store=StoreSettings(path=folder / "index"))
        embedder: Embedder = (
            FakeEmbedder() if args.fake_embedder else make_embedder(settings.embedding)
        )
        first = sync_sources(config, settings=settings, embedder=lambda: embedder)
        started = time.perf_counter()
        again = sync_sources(config, settings=settings, embedder=lambda: embedder)
        wall = time.perf_counter() - started
    print(_line("first sync ", first))
    print(_line("second sync", again))
    share = 100 * again.seconds / first.seconds
    print(
        f"unchanged re-sync: {again.seconds:.2f} s ({wall:.2f} s wall) = {share:.1f} % of the first"
    )
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
