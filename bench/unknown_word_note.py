"""How often the offline answer carries the note "the policy documents never use the word X".

Usage::

    PYTHONPATH=. python bench/unknown_word_note.py \\
        --set sample=data/eval/questions.jsonl@/tmp/idx-sample [--set ...] \\
        [--cache /tmp/answerability-cache]

Each question is searched (or its search read from the cache that
`bench/answerability_fit.py` writes) and drafted by the offline answerer as the
service does for a first question; it counts the drafts shown with the note,
over answerable and unanswerable questions, and the drafts judged covered that
carry it. Only public functions of the answerer are used, so the same script
measures an older checkout.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from cached_embedder import CachedEmbedder

from assistant.answering.extractive import draft_extractive
from assistant.answering.prompt import build_prompt
from assistant.config import Settings
from assistant.embeddings.factory import make_embedder
from assistant.retrieval.evaluation import load_questions
from assistant.retrieval.factory import open_retriever
from assistant.tokens import get_tokenizer
from assistant.types import SearchResult


def count(name: str, files: Sequence[Path], index: Path, cache: Path) -> None:
    """Print how often the note fires on one set."""
    settings = Settings.from_env({})
    settings = replace(settings, store=replace(settings.store, path=index))
    embedder = CachedEmbedder(make_embedder(settings.embedding), cache / f"{name}-vectors.pkl")
    retriever = open_retriever(settings, embedder=embedder)
    tokenizer = get_tokenizer(settings.chunking.encoding)
    fired = {True: 0, False: 0}
    total = {True: 0, False: 0}
    on_covered = 0
    for path in files:
        for question in load_questions(path):
            key = hashlib.sha1(f"{index}\n{question.question}".encode()).hexdigest()[:16]
            stored = cache / f"{name}-{key}.pkl"
            result: SearchResult = (
                pickle.loads(stored.read_bytes())
                if stored.exists()
                else retriever.search(question.question)
            )
            prompt = build_prompt(
                question.question,
                result.hits,
                (),
                budget=settings.retrieval.context_tokens,
                tokenizer=tokenizer,
            )
            draft = draft_extractive(
                question.question,
                prompt.sources,
                embedder=embedder,
                unknown_words=result.unknown_words,
                retrieval_matched=not result.no_good_match,
            )
            answerable = bool(question.gold)
            shown = draft.covered and bool(draft.unknown_words)
            total[answerable] += 1
            fired[answerable] += shown
            on_covered += shown
    print(
        f"{name}: note shown on {fired[True]} of {total[True]} answerable and "
        f"{fired[False]} of {total[False]} unanswerable questions "
        f"({on_covered} of them on answers judged covered)"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--set", action="append", required=True)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/answerability-cache"))
    args = parser.parse_args(argv)
    for text in args.set:
        name, rest = text.split("=", 1)
        files, index = rest.rsplit("@", 1)
        count(name, [Path(f) for f in files.split(",")], Path(index), args.cache)


if __name__ == "__main__":
    main()
