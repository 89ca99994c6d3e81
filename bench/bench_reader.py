"""What the reader adds to an offline answer: p50/p95 ms beside the search, in the same run.

Usage (an index built with default settings)::

    PYTHONPATH=. python bench/bench_reader.py data/eval/github-site-policy.jsonl \\
        --index /tmp/idx-github [--limit 40]

For each question: one live search, then the two reader calls an offline
answer makes (the first five retrieved passages; the candidate answer units
under their headings), timed apart. Prints p50/p95 of each and the ratio of
the reader's p95 to the search's (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from assistant.answering.extractive import _candidates
from assistant.answering.ranking import reader_text, token_embedder
from assistant.config import Settings
from assistant.embeddings.factory import make_embedder
from assistant.embeddings.late_reader import load_reader
from assistant.retrieval.evaluation import load_questions
from assistant.retrieval.factory import open_retriever

_UNITS = 24
_PASSAGES = 5


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("questions", type=Path)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=40)
    args = parser.parse_args(argv)
    settings = Settings.from_env({})
    settings = replace(settings, store=replace(settings.store, path=args.index))
    embedder = make_embedder(settings.embedding)
    tokens = token_embedder(embedder)
    assert tokens is not None, "the packaged embedder returns word pieces"
    reader = load_reader(tokens)
    retriever = open_retriever(settings, embedder=embedder)
    retriever.search("warm up")
    reader.score("warm up", ["warm up"])
    search, passages, units = [], [], []
    for question in load_questions(args.questions)[: args.limit]:
        started = time.perf_counter()
        result = retriever.search(question.question)
        search.append(time.perf_counter() - started)
        hits = result.hits[:_PASSAGES]
        started = time.perf_counter()
        reader.score(question.question, [h.chunk.text for h in hits])
        passages.append(time.perf_counter() - started)
        shown = [c.unit for c in _candidates(result.hits)][:_UNITS]
        started = time.perf_counter()
        reader.score(question.question, [reader_text(u.text, u.headings, u.context) for u in shown])
        units.append(time.perf_counter() - started)
    both = np.asarray(passages) + np.asarray(units)
    for name, values in (
        ("search", search),
        ("reader: passages", passages),
        ("reader: units", units),
        ("reader: both", both),
    ):
        p50, p95 = np.percentile(np.asarray(values) * 1000, [50, 95])
        print(f"{name:<18} p50 {p50:7.1f} ms  p95 {p95:7.1f} ms")
    ratio = np.percentile(both, 95) / np.percentile(search, 95)
    print(f"reader p95 / search p95: {ratio:.2f} ({len(search)} questions)")


if __name__ == "__main__":
    main()
