"""Does a text's vector depend on its batch-mates? And what does a batch of one cost?

Usage: ``PYTHONPATH=. python bench/batch_invariance.py [--chunks 200]``

Embeds generated policy-like chunks (``bench_embeddings.chunks``, fixed seed) with the
packaged file in batches of 32, the dynamic copy in batches of 32 and the dynamic copy
one text at a time; prints chunks/s (wall and per CPU-second of the process) and, for
both variants, the minimum cosine and largest component difference between a text's
vector in a batch and alone. The dynamic copy is built into a temporary directory.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_embeddings import chunks

from assistant.embeddings.local import OnnxEmbedder


def rate(embedder: OnnxEmbedder, texts: list[str]) -> str:
    embedder.embed(texts[:4])  # load and warm up
    wall, cpu = time.perf_counter(), time.process_time()
    embedder.embed(texts)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return f"{len(texts) / wall:.1f} chunks/s wall, {len(texts) / cpu:.1f} per cpu-s"


def batch_effect(embedder: OnnxEmbedder, texts: list[str]) -> str:
    batched = embedder.embed(texts)
    alone = np.vstack([embedder.embed([text]) for text in texts])
    cosine = float((batched * alone).sum(axis=1).min())
    return f"min cosine {cosine:.4f}, max |diff| {float(np.abs(batched - alone).max()):.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=200)
    args = parser.parse_args()
    texts = chunks(args.chunks, random.Random(0))
    with tempfile.TemporaryDirectory(prefix="batch-invariance-") as cache:
        packaged = OnnxEmbedder(batch_size=32)
        dynamic = OnnxEmbedder(variant="dynamic", batch_size=32, cache_dir=Path(cache))
        single = OnnxEmbedder(variant="dynamic", batch_size=1, cache_dir=Path(cache))
        for label, embedder in (("packaged, batch 32", packaged), ("dynamic, batch 32", dynamic),
                                ("dynamic, batch 1", single)):  # fmt: skip
            print(f"{label:<20} {rate(embedder, texts)}", flush=True)
        for label, embedder in (("packaged", packaged), ("dynamic", dynamic)):
            print(f"batched vs alone, {label:<9} {batch_effect(embedder, texts[:50])}")


if __name__ == "__main__":
    main()
