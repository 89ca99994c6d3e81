"""Embed every question and passage of the reader's training pairs once, word pieces kept.

The late reader (`assistant.embeddings.late_reader`) reads the packaged MiniLM's
word-piece vectors, the same ones the offline ranking already computes; its
head is trained on them (`bench/train_late_reader.py`). Usage::

    PYTHONPATH=. python bench/reader_vectors.py data/training/reader/pairs.jsonl \\
        bench/out/reader-vectors.npz

Writes, for the unique texts in input order, the word-piece vectors (float16,
rows concatenated) and each text's first row.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from assistant.config import EmbeddingSettings
from assistant.embeddings.factory import make_embedder

logger = logging.getLogger(__name__)
_BATCH = 64


def texts_of(pairs: Path) -> list[str]:
    """Return the unique questions and passages of ``pairs``, questions first."""
    rows = [json.loads(line) for line in pairs.read_text(encoding="utf-8").splitlines() if line]
    return list(dict.fromkeys([*(r["question"] for r in rows), *(r["passage"] for r in rows)]))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("pairs", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    embedder = make_embedder(EmbeddingSettings())
    texts = texts_of(args.pairs)
    rows: list[np.ndarray] = []
    starts = [0]
    for start in range(0, len(texts), _BATCH):
        _, tokens = embedder.embed_tokens(texts[start : start + _BATCH])  # type: ignore[attr-defined]
        for token in tokens:
            rows.append(token.vectors.astype(np.float16))
            starts.append(starts[-1] + len(token.vectors))
        logger.info("embedded %d / %d texts", min(start + _BATCH, len(texts)), len(texts))
    np.savez(
        args.out,
        texts=np.asarray(texts, dtype=object),
        vectors=np.concatenate(rows),
        starts=np.asarray(starts, dtype=np.int64),
    )
    logger.info("wrote %s", args.out)


if __name__ == "__main__":
    main()
