"""What token-level late interaction adds per question, against today's search, in one run.

Usage: ``PYTHONPATH=. python bench/late_interaction_cost.py --index /tmp/idx-sample
[--questions data/eval/questions.jsonl] [--limit 40]``

For each question, interleaved so machine load hits all alike: the search
(`Retriever.search`), the offline ranking as shipped (one embedding call), and
the ranking with word-piece vectors and max-sim from the same model run
(``token_level=True``), and the max-sim step alone (what late interaction adds once
the model has run: the word-piece vectors come out of the same run). Prints p50 / p95
of each and of the added cost, and the added p95 as a ratio of the search's p95.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from assistant.answering.extractive import _candidates
from assistant.answering.prompt import build_prompt
from assistant.answering.ranking import _embedded, late_interaction, rank_units
from assistant.config import Settings
from assistant.embeddings.factory import make_embedder
from assistant.retrieval.evaluation import load_questions
from assistant.retrieval.factory import open_retriever
from assistant.tokens import get_tokenizer


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=Path, default=Path("data/eval/questions.jsonl"))
    parser.add_argument("--limit", type=int, default=40)
    args = parser.parse_args(argv)
    settings = Settings.from_env({})
    settings = replace(settings, store=replace(settings.store, path=args.index))
    embedder = make_embedder(settings.embedding)
    retriever = open_retriever(settings, embedder=embedder)
    tokenizer = get_tokenizer(settings.chunking.encoding)
    retriever.search("warm up")
    times: dict[str, list[float]] = {"search": [], "ranking": [], "late": [], "max-sim": []}
    for question in load_questions(args.questions)[: args.limit]:
        q = question.question
        started = time.perf_counter()
        result = retriever.search(q)
        times["search"].append(time.perf_counter() - started)
        budget = settings.retrieval.context_tokens
        prompt = build_prompt(q, result.hits, (), budget=budget, tokenizer=tokenizer)
        candidates = _candidates(prompt.sources)
        for name, token_level in (("ranking", False), ("late", True)):
            started = time.perf_counter()
            rank_units(q, candidates, embedder=embedder, token_level=token_level)
            times[name].append(time.perf_counter() - started)
        # The work late interaction adds once the model has run: max-sim over the pieces.
        texts = [q, *(_embedded(c.unit) for c in candidates[:24])]
        _, pieces = embedder.embed_tokens(texts)  # type: ignore[attr-defined]
        started = time.perf_counter()
        late_interaction(pieces[0], pieces[1:])
        times["max-sim"].append(time.perf_counter() - started)
    added = np.asarray(times["late"]) - np.asarray(times["ranking"])
    rows = {**{k: np.asarray(v) for k, v in times.items()}, "added by late": added}
    for name, values in rows.items():
        p50, p95 = np.percentile(values * 1000, [50, 95])
        print(f"{name:<16} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms")
    search95 = np.percentile(times["search"], 95)
    ratio = np.percentile(added, 95) / search95
    maxsim = np.percentile(times["max-sim"], 95) / search95
    print(f"added p95 / search p95 = {ratio:.2f}; max-sim p95 / search p95 = {maxsim:.3f}")


if __name__ == "__main__":
    main()
