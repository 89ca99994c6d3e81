"""Answer figures of the offline answerer over cached searches and embeddings, for quick trials.

Usage::

    PYTHONPATH=. python bench/offline_answers.py \\
        --set sample=data/eval/questions.jsonl@/tmp/idx-sample [--set ...] \\
        [--weights late=0.3,words=0.3] [--cache /tmp/answerability-cache]

It runs `evaluate_answers` (the same service and scoring as ``eval --answers
--answer-mode both``) with a searcher that replays the cached search of each
question (searching once when it is not cached) and the cached embedder of
`bench/cached_embedder.py`, so a trial of ranking weights costs seconds, not
minutes. ``eval --answers`` stays the figure of record.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from answerability_fit import parse_set
from cached_embedder import CachedEmbedder

from assistant.answering import extractive, ranking
from assistant.answering.evaluation import METRICS, evaluate_answers
from assistant.answering.service import build_assistant
from assistant.config import Settings
from assistant.embeddings.factory import make_embedder
from assistant.protocols import Searcher
from assistant.retrieval.evaluation import load_questions
from assistant.retrieval.factory import open_retriever
from assistant.types import ANONYMOUS, SearchFilters, SearchResult, User


@dataclass
class CachedSearcher:
    """Replays the cached search of a query (searching once when it is not cached)."""

    inner: Searcher
    index: Path
    cache: Path
    name: str

    def search(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        user: User = ANONYMOUS,
    ) -> SearchResult:
        key = hashlib.sha1(f"{self.index}\n{question}".encode()).hexdigest()[:16]
        stored = self.cache / f"{self.name}-{key}.pkl"
        if stored.exists():
            result: SearchResult = pickle.loads(stored.read_bytes())
            return result
        result = self.inner.search(question, k=k, filters=filters, user=user)
        stored.write_bytes(pickle.dumps(result))
        return result


def figures(
    name: str, files: Sequence[Path], index: Path, cache: Path, dump: Path | None = None
) -> dict[str, list[float]]:
    """Return each metric for the assistant and the baseline on one set."""
    settings = Settings.from_env({})
    settings = replace(settings, store=replace(settings.store, path=index))
    cache.mkdir(parents=True, exist_ok=True)
    embedder = CachedEmbedder(make_embedder(settings.embedding), cache / f"{name}-vectors.pkl")
    searcher = CachedSearcher(open_retriever(settings, embedder=embedder), index, cache, name)
    service = build_assistant(settings, searcher=searcher, embedder=embedder)
    questions = [q for path in files for q in load_questions(path)]
    reports = evaluate_answers(
        service, questions, answerers=("assistant", "baseline"), embedder=embedder
    )
    embedder.save()
    if dump is not None:
        with dump.open("a", encoding="utf-8") as handle:
            for o in reports[0].outcomes:
                handle.write(f"{name}\t{o.question.id}\t{','.join(o.failures())}\t{o.answer!r}\n")
    out: dict[str, list[float]] = {}
    for report in reports:
        for key, value in report.figures().items():
            out.setdefault(key, []).append(value)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--set", action="append", required=True, type=parse_set)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/answerability-cache"))
    parser.add_argument("--weights", default="")
    parser.add_argument("--dump", type=Path, help="append each answer and its failures here")
    args = parser.parse_args(argv)
    if args.weights:
        changes = {k: float(v) for k, v in (p.split("=") for p in args.weights.split(","))}
        weights = replace(ranking.DEFAULT_WEIGHTS, **changes)  # type: ignore[arg-type]
        defaults = extractive.draft_extractive.__kwdefaults__
        assert defaults is not None
        defaults["weights"] = weights
    for name, files, index in args.set:
        result = figures(name, files, index, args.cache, args.dump)
        print(f"{name} (assistant / baseline)")
        for key, label in METRICS:
            values = " / ".join(f"{v:.3f}" for v in result.get(key, []))
            print(f"  {label:<38} {values}")


if __name__ == "__main__":
    main()
