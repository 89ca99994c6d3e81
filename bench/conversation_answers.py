"""Last-turn answers of ``data/eval/conversations.jsonl`` through the offline service.

Usage::

    PYTHONPATH=. python bench/conversation_answers.py \\
        --index sample=/tmp/idx-sample --index github-site-policy=/tmp/idx-github \\
        --index sourcegraph-handbook=/tmp/idx-handbook [data/eval/conversations.jsonl]

Each conversation's last turn is asked with the earlier turns as history (the
assistant turns are placeholders: the offline rewriter reads user turns only),
as the chat asks it. Counts, for follow-ups and topic changes apart: unanswerable
last turns answered "not covered", and answerable ones whose answer holds a gold
phrase. Uses only the public service, so it measures an older checkout too.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from assistant.answering.evaluation import normalise_answer, says_not_covered
from assistant.answering.service import build_assistant
from assistant.config import Settings
from assistant.embeddings.factory import make_embedder
from assistant.retrieval.factory import open_retriever
from assistant.types import Turn


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("conversations", nargs="?", default="data/eval/conversations.jsonl")
    parser.add_argument("--index", action="append", required=True)
    args = parser.parse_args(argv)
    indexes = dict(item.split("=", 1) for item in args.index)
    base = Settings.from_env({})
    embedder = make_embedder(base.embedding)
    services = {}
    for name, path in indexes.items():
        settings = replace(base, store=replace(base.store, path=Path(path)))
        services[name] = build_assistant(
            settings, searcher=open_retriever(settings, embedder=embedder), embedder=embedder
        )
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for line in Path(args.conversations).read_text(encoding="utf-8").splitlines():
        conversation = json.loads(line)
        service = services.get(conversation["set"])
        if service is None:
            continue
        turns = conversation["turns"]
        history = [
            t for e in turns[:-1] for t in (Turn("user", e["question"]), Turn("assistant", "…"))
        ]
        last = turns[-1]
        run = service.ask(last["question"], history)
        text = "".join(run)
        refused = says_not_covered(text, mode=run.mode)
        kind = "follow-up" if last["follow_up"] else "topic change"
        if last.get("unanswerable"):
            key, ok = f"{kind}, unanswerable: said not covered", refused
        else:
            shown = normalise_answer(text)
            phrases = [normalise_answer(g["must_contain"]) for g in last.get("gold", [])]
            key, ok = (
                f"{kind}, answerable: gold phrase",
                not refused and any(p in shown for p in phrases),
            )
        total[key] += 1
        right[key] += ok
        print(f"{conversation['id']} {'ok ' if ok else 'MISS'} {key}: {run.query!r}", flush=True)
    for key in sorted(total):
        print(f"{key:<48} {right[key]:>3} / {total[key]}")


if __name__ == "__main__":
    main()
