"""The fake Graph server for the sync tests, and a harness that syncs and checks the index."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.graph_server import FakeGraph
from tests.sync.harness import Harness


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeGraph]:
    with FakeGraph.started(tmp_path_factory.mktemp("graph-tls")) as server:
        yield server


@pytest.fixture
def harness(graph: FakeGraph, tmp_path: Path) -> Harness:
    graph.faults.clear()
    graph.reset_counts()
    return Harness(graph, tmp_path)
