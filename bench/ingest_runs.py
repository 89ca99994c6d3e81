"""Ingest runs for ``bench_ingest.py``, each in a spawned child process.

A child of its own gives each run its own peak RSS and a cold Chroma client.
Run from ``bench/`` on ``sys.path`` (as ``python bench/bench_ingest.py`` does).
"""

from __future__ import annotations

import cProfile
import io
import multiprocessing
import pstats
import resource
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from bench_search import RandomQueryEmbedder

from assistant.config import EmbeddingSettings, Settings, StoreSettings
from assistant.documents.loading import discover
from assistant.embeddings.factory import make_embedder
from assistant.index.chroma import ChromaIndex
from assistant.index.ingest import IngestReport, ingest
from assistant.index.plan import doc_key
from assistant.protocols import Embedder

Timings = tuple[tuple[str, float], ...]


class MeteredEmbedder:
    """Delegates to an `Embedder`, adding up the process CPU time spent in ``embed``.

    Process CPU time counts onnxruntime's threads too; on a loaded machine it is
    steadier than the wall time that ``IngestReport.timings`` records.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.cpu_s = 0.0

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def max_input_tokens(self) -> int:
        return self.inner.max_input_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.inner.count_tokens(texts)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        started = time.process_time()
        try:
            return self.inner.embed(texts)
        finally:
            self.cpu_s += time.process_time() - started


@dataclass(frozen=True, slots=True)
class IngestRun:
    """A first ingest and an unchanged second one, in one child process."""

    first: IngestReport
    first_s: float
    embed_cpu_s: float  # CPU time in embed() during the first ingest
    second: IngestReport
    second_s: float
    rss_before_mb: float
    rss_peak_mb: float
    breakdown: Timings  # the unchanged run's scan, split in two
    profile: str  # cumulative profile of another unchanged run, if asked for


def _maxrss_mb() -> float:
    """Return this process's peak RSS in MiB.

    ``ru_maxrss`` survives ``exec`` on Linux, so a spawned child would report
    its parent's peak at fork time; ``VmHWM`` belongs to the child's own memory.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _timed_ingest(root: Path, settings: Settings, embedder: Embedder) -> tuple[IngestReport, float]:
    started = time.perf_counter()
    report = ingest([root], settings=settings, embedder=embedder)
    return report, time.perf_counter() - started


def _breakdown(root: Path, settings: Settings, embedder: Embedder) -> Timings:
    """Time the two halves of an unchanged run's scan: hashing files, reading metadata."""
    started = time.perf_counter()
    for _, path in discover([root]):
        doc_key(path, signature="bench")
    hashed = time.perf_counter() - started
    index = ChromaIndex(
        settings.store, embedder_identity=embedder.identity, dimension=embedder.dimension
    )
    started = time.perf_counter()
    index.stored_documents()
    return (("read+hash files", hashed), ("stored_documents()", time.perf_counter() - started))


def _profile(root: Path, settings: Settings, embedder: Embedder) -> str:
    profiler = cProfile.Profile()
    profiler.runcall(_timed_ingest, root, settings, embedder)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(16)
    return out.getvalue()


def _two_ingests(root: Path, index: Path, embedder: Embedder, *, profile: bool) -> IngestRun:
    settings = Settings(store=StoreSettings(path=index))
    rss_before = _maxrss_mb()
    metered = MeteredEmbedder(embedder)
    first, first_s = _timed_ingest(root, settings, metered)
    embed_cpu_s = metered.cpu_s
    second, second_s = _timed_ingest(root, settings, metered)
    rss_peak = _maxrss_mb()
    return IngestRun(
        first,
        first_s,
        embed_cpu_s,
        second,
        second_s,
        rss_before,
        rss_peak,
        _breakdown(root, settings, embedder),
        _profile(root, settings, embedder) if profile else "",
    )


def model_child(root: Path, index: Path, profile: bool) -> IngestRun:
    """Ingest ``root`` twice with the packaged local model (the shipped int8 file)."""
    embedder = make_embedder(EmbeddingSettings(variant="packaged"))
    return _two_ingests(root, index, embedder, profile=profile)


def dynamic_child(root: Path, index: Path, profile: bool) -> IngestRun:
    """Ingest ``root`` twice with the dynamically quantized local model (``variant="dynamic"``)."""
    embedder = make_embedder(EmbeddingSettings(variant="dynamic"))
    return _two_ingests(root, index, embedder, profile=profile)


def stub_child(root: Path, index: Path, profile: bool) -> IngestRun:
    """Ingest ``root`` twice with random vectors: everything but the model, at scale."""
    return _two_ingests(root, index, RandomQueryEmbedder(), profile=profile)


def in_child(
    work: Callable[[Path, Path, bool], IngestRun], root: Path, index: Path, *, profile: bool
) -> IngestRun:
    """Run ``work(root, index, profile)`` in a fresh (spawned) process."""
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
        return pool.submit(work, root, index, profile).result()
