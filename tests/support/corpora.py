"""Each corpus ingested once per test session, copied where a test wants an index of it.

Parsing the sample policies (PDF, Word, HTML...) and writing them to Chroma is the slow
part of serving an app in a test; the index it gives is always the same. `ingest_once`
ingests a folder the first time it is asked for with given settings, keeps that index
in a folder of the session, and afterwards copies it to the index path the test gave
(a copy per test: a test may write to its index, add feedback to it, re-ingest into it).
The index is that of the fast fake embedder (`tests.conftest.FakeEmbedder`) unless the
test names another embedder (the packaged model, for tests that read its cosines): each
embedder's identity has its own ingest. A remote store, or an index path that exists,
gets a real ingest. `tests.support.served_ui.launched` uses it, so every app served over the sample
policies shares one ingest.

    problems = ingest_once(SAMPLE_POLICIES, settings)  # settings.store.path now holds it
    ingest_once(SAMPLE_POLICIES, settings, embedder=make_embedder(settings.embedding))
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from assistant.config import LLMSettings, Settings
from assistant.index.ingest import ingest
from assistant.protocols import Embedder
from assistant.types import Problem
from tests.conftest import FakeEmbedder

__all__ = ["ingest_once"]

_BUILT: dict[tuple[Path, str, str], tuple[Path, tuple[Problem, ...]]] = {}
_HOME: list[Path] = []


def _home() -> Path:
    if not _HOME:
        _HOME.append(Path(tempfile.mkdtemp(prefix="corpora-")))
        atexit.register(shutil.rmtree, _HOME[0], True)
    return _HOME[0]


def _key(docs: Path, settings: Settings, embedder: Embedder) -> tuple[Path, str, str]:
    """What decides the index: the folder, the embedder, every setting but where it is."""
    neutral = replace(
        settings,
        store=replace(settings.store, path=Path("index")),
        ui=replace(settings.ui, port=1),
        llm=LLMSettings(),
    )
    return docs.resolve(), repr(neutral), embedder.identity


def ingest_once(
    docs: Path, settings: Settings, *, embedder: Embedder | None = None
) -> tuple[Problem, ...]:
    """Give ``settings.store.path`` an index of ``docs``; return its problems.

    The index is that of ``embedder``, the fast `FakeEmbedder` when None.
    """
    target = settings.store.path
    embedder = embedder or FakeEmbedder()
    if settings.store.is_remote or target.exists():
        return ingest([docs], settings=settings, embedder=embedder).problems
    key = _key(docs, settings, embedder)
    if key not in _BUILT:
        built = _home() / f"index-{len(_BUILT)}"
        at_home = replace(settings, store=replace(settings.store, path=built))
        report = ingest([docs], settings=at_home, embedder=embedder)
        _BUILT[key] = built, report.problems
    built, problems = _BUILT[key]
    shutil.copytree(built, target)
    return problems
