"""Dense-only retrieval on the evaluation set with each local embedding variant.

Usage: ``PYTHONPATH=. python bench/eval_embedding_variants.py``

A proxy for the real pipeline, to see whether the dynamically quantized
variant loses retrieval quality: the Markdown and text files of
``data/policies`` are cut at blank lines into passages of at least 60 words
(no headings, no hybrid search), every question of ``data/eval/questions.jsonl``
with a gold passage in those files is embedded, and a passage is a hit when it
comes from the gold file and contains the gold phrase.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from assistant.embeddings.local import OnnxEmbedder


@dataclass(frozen=True, slots=True)
class Passage:
    file: str
    text: str


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def passages(root: Path, *, min_words: int = 60) -> list[Passage]:
    out = []
    for path in sorted([*root.rglob("*.md"), *root.rglob("*.txt")]):
        name = path.relative_to(root).as_posix()
        buffer: list[str] = []
        for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
            buffer.append(block)
            if sum(len(b.split()) for b in buffer) >= min_words:
                out.append(Passage(name, "\n\n".join(buffer)))
                buffer = []
        if buffer:
            out.append(Passage(name, "\n\n".join(buffer)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=Path("data/policies"))
    parser.add_argument("--questions", type=Path, default=Path("data/eval/questions.jsonl"))
    args = parser.parse_args()
    corpus = passages(args.corpus)
    questions, golds = [], []
    for line in args.questions.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        hits = {
            i
            for gold in item["gold"]
            for i, p in enumerate(corpus)
            if p.file == gold["file"] and _norm(gold["must_contain"]) in _norm(p.text)
        }
        if hits:
            questions.append(item["question"])
            golds.append(hits)
    print(f"{len(corpus)} passages, {len(questions)} answerable questions")
    with tempfile.TemporaryDirectory() as cache:
        for variant in ("packaged", "dynamic"):
            embedder = OnnxEmbedder(variant=variant, cache_dir=Path(cache))
            scores = embedder.embed(questions) @ embedder.embed([p.text for p in corpus]).T
            ranks = np.argsort(-scores, axis=1)
            first = [
                next((r for r, i in enumerate(row) if i in gold), len(row))
                for row, gold in zip(ranks, golds, strict=True)
            ]
            recall = {k: np.mean([f < k for f in first]) for k in (1, 4, 10)}
            mrr = np.mean([1 / (f + 1) if f < 10 else 0.0 for f in first])
            print(
                f"  {embedder.identity:<38} recall@1 {recall[1]:.3f}  recall@4 {recall[4]:.3f}"
                f"  recall@10 {recall[10]:.3f}  MRR@10 {mrr:.3f}"
            )


if __name__ == "__main__":
    main()
