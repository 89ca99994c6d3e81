"""Throughput of the local embedder and what its choices buy; prints figures.

Usage: ``PYTHONPATH=. python bench/bench_embeddings.py [--chunks 2000] [--sentences 500]``

Runs, on generated policy-like chunks of 100-200 words (fixed seed):
  (a) OnnxEmbedder: tokenize, sort by length, pad per batch, pool, normalise;
  (b) the bare session on the same sorted, pre-tokenized batches (our overhead
      is (b) - (a)), and on unsorted batches (what sorting buys);
  (c) Chroma's default path: every input padded to 256, batches of 32;
  (d) the dynamically quantized variant, plus its cosine to the packaged model
      on realistic sentences and on the chunks;
  and thread spinning on vs off with 2 threads (wall and CPU time).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Tokenizer

from assistant.embeddings.local import MAX_INPUT_TOKENS, OnnxEmbedder
from assistant.embeddings.model_files import packaged_model_path, packaged_tokenizer_path

Ids = list[npt.NDArray[np.int64]]

SUBJECTS = [
    "Employees",
    "Contractors",
    "Line managers",
    "The finance team",
    "New starters",
    "Staff on probation",
    "Part-time workers",
    "The HR department",
    "Team leads",
    "Volunteers",
]
ACTIONS = [
    "may take up to {n} days of annual leave each year, subject to approval",
    "must submit expense claims with itemised receipts within {n} days",
    "can apply for an emergency loan of up to {n} hundred pounds at 2% interest",
    "should report sick leave to their manager before {n} am on the first day",
    "are entitled to {n} weeks of paid parental leave after one year of service",
    "must complete data protection training every {n} months",
    "may work remotely for up to {n} days a week with written agreement",
    "must not accept gifts worth more than {n} pounds from suppliers",
    "are reimbursed for rail travel in standard class for journeys over {n} miles",
    "must keep personal data no longer than {n} years after the contract ends",
    "can carry over at most {n} unused leave days into the next year",
    "must give {n} weeks of notice before resigning",
]
CLAUSES = [
    "unless the director agrees otherwise in writing",
    "as set out in the staff handbook",
    "in line with the organisation's equality policy",
    "and the request is recorded in the HR system",
    "except during the year-end freeze",
    "where the budget holder has signed the form",
]


def sentence(rng: random.Random) -> str:
    action = rng.choice(ACTIONS).format(n=rng.randint(2, 30))
    clause = f", {rng.choice(CLAUSES)}" if rng.random() < 0.6 else ""
    return f"{rng.choice(SUBJECTS)} {action}{clause}."


def chunks(count: int, rng: random.Random) -> list[str]:
    out = []
    for _ in range(count):
        target, parts = rng.randint(100, 200), list[str]()
        while sum(len(p.split()) for p in parts) < target:
            parts.append(sentence(rng))
        out.append(" ".join(parts))
    return out


def tokenizer() -> Tokenizer:
    tok = Tokenizer.from_file(str(packaged_tokenizer_path()))
    tok.no_padding()
    tok.enable_truncation(max_length=MAX_INPUT_TOKENS)
    return tok


def session(path: Path, *, threads: int = 2, spinning: bool = False) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    flag = "1" if spinning else "0"
    options.add_session_config_entry("session.intra_op.allow_spinning", flag)
    options.add_session_config_entry("session.inter_op.allow_spinning", flag)
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def run_batches(sess: ort.InferenceSession, batches: Sequence[Ids], pad_to: int | None) -> None:
    for batch in batches:
        width = pad_to or max(len(row) for row in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for i, row in enumerate(batch):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": mask * 0})


def batched(ids: Ids, size: int, *, sort: bool) -> list[Ids]:
    rows = sorted(ids, key=len) if sort else ids
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def timed(label: str, count: int, work: Callable[[], object]) -> tuple[float, float]:
    """Run ``work``; return chunks per wall second and per CPU second.

    On a shared machine the wall rate depends on other load; the CPU rate
    (process CPU time, all threads) is the steadier figure for comparisons.
    """
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"  {label:<50} {count / wall:6.1f} chunks/s wall  {count / cpu:6.1f} chunks/cpu-s"
        f"  ({wall:.1f}s wall, {cpu:.1f}s cpu)"
    )
    return count / wall, count / cpu


def cosines(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> str:
    c = (a * b).sum(axis=1)
    return f"mean {c.mean():.4f}  min {c.min():.4f}  p5 {np.percentile(c, 5):.4f}"


Results = dict[str, tuple[float, float]]


def bench_packaged(texts: list[str], ids: Ids, batch: int, results: Results) -> OnnxEmbedder:
    packaged = OnnxEmbedder(batch_size=batch)
    packaged.embed(texts[:8])  # load outside the timing
    bare = session(packaged_model_path())
    run_batches(bare, batched(ids[:8], batch, sort=True), None)
    n = len(texts)
    results["a"] = timed(
        "(a) OnnxEmbedder (sorted, dynamic padding)", n, partial(packaged.embed, texts)
    )
    sorted_batches, unsorted = batched(ids, batch, sort=True), batched(ids, batch, sort=False)
    results["b"] = timed(
        "(b) bare session, sorted, pre-tokenized",
        n,
        partial(run_batches, bare, sorted_batches, None),
    )
    results["b2"] = timed(
        "(b2) bare session, unsorted, pad to batch longest",
        n,
        partial(run_batches, bare, unsorted, None),
    )
    chroma_like = batched(ids, 32, sort=False)
    results["c"] = timed(
        "(c) Chroma-style: pad every input to 256",
        n,
        partial(run_batches, bare, chroma_like, MAX_INPUT_TOKENS),
    )
    return packaged


def bench_dynamic(
    packaged: OnnxEmbedder, texts: list[str], sentences: list[str], batch: int, results: Results
) -> None:
    with tempfile.TemporaryDirectory() as cache:
        started = time.perf_counter()
        dynamic = OnnxEmbedder(variant="dynamic", batch_size=batch, cache_dir=Path(cache))
        dynamic.embed(texts[:8])
        print(f"  (building the dynamic variant took {time.perf_counter() - started:.1f}s)")
        results["d"] = timed(
            "(d) dynamic-quantized variant via OnnxEmbedder",
            len(texts),
            partial(dynamic.embed, texts),
        )
        print("cosine, dynamic vs packaged:")
        vectors = {}
        for name, sample in (("sentences", sentences), ("chunks", texts)):
            vectors[name] = (packaged.embed(sample), dynamic.embed(sample))
            print(f"  {len(sample):5d} {name:<10} {cosines(*vectors[name])}")
        print_neighbour_agreement(vectors["sentences"], vectors["chunks"])


def print_neighbour_agreement(
    queries: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
    corpus: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
    k: int = 5,
) -> None:
    """Print how often both variants rank the same chunks first for each sentence."""
    tops = [np.argsort(-(q @ c.T), axis=1)[:, :k] for q, c in zip(queries, corpus, strict=True)]
    top1 = float((tops[0][:, 0] == tops[1][:, 0]).mean())
    overlap = np.mean([len(set(a) & set(b)) / k for a, b in zip(*tops, strict=True)])
    print(
        f"  sentences as queries over the chunks: top-1 same {top1:.1%}, "
        f"top-{k} overlap {overlap:.1%}"
    )


def print_ratios(results: Results) -> None:
    print("ratios (wall / cpu):")
    for label, top, bottom in [
        ("our wrapper vs bare model (a)/(b)", "a", "b"),
        ("sorting (b)/(b2)", "b", "b2"),
        ("ours vs Chroma-style padding (a)/(c)", "a", "c"),
        ("dynamic vs packaged (d)/(a)", "d", "a"),
    ]:
        wall = results[top][0] / results[bottom][0]
        cpu = results[top][1] / results[bottom][1]
        print(f"  {label:<40} {wall:5.2f} / {cpu:5.2f}")


def bench_spinning(ids: Ids, batch: int) -> None:
    subset = batched(ids[:500], batch, sort=True)
    print(f"spinning, bare session, 2 threads, {min(500, len(ids))} chunks:")
    for spinning in (False, True):
        sess = session(packaged_model_path(), spinning=spinning)
        run_batches(sess, subset[:1], None)
        label = f"allow_spinning={int(spinning)}"
        timed(label, min(500, len(ids)), partial(run_batches, sess, subset, None))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    rng = random.Random(7)
    texts, sentences = chunks(args.chunks, rng), [sentence(rng) for _ in range(args.sentences)]
    ids = [np.asarray(e.ids, dtype=np.int64) for e in tokenizer().encode_batch(texts)]
    lengths = np.array([len(row) for row in ids])
    print(f"{len(texts)} chunks, word pieces: mean {lengths.mean():.0f}, max {lengths.max()}")
    print(f"onnxruntime {ort.__version__}, batch {args.batch}, 2 threads, spinning off")
    results: Results = {}
    packaged = bench_packaged(texts, ids, args.batch, results)
    bench_dynamic(packaged, texts, sentences, args.batch, results)
    print_ratios(results)
    bench_spinning(ids, args.batch)


if __name__ == "__main__":
    main()
