"""How many follow-up rewrites are right on ``data/eval/conversations.jsonl`` (offline rewriter).

Usage: ``PYTHONPATH=. python bench/conversation_rewrites.py [data/eval/conversations.jsonl]``

For each conversation, the last turn is rewritten from the earlier user turns by
the offline rewriter (`assistant.answering.rewrite.QueryRewriter` without a
model), as the chat does. A rewrite is right when:

- a real follow-up (``follow_up: true``) becomes a query holding every word of
  ``keeps`` (case-insensitive substrings);
- a question that stands on its own (``follow_up: false``) leaks none of ``drops``.

It prints the counts per kind and set, and each wrong rewrite.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from assistant.answering.rewrite import QueryRewriter
from assistant.types import Turn

DEFAULT = Path("data/eval/conversations.jsonl")


def judge(turn: dict[str, object], query: str) -> bool:
    """Return whether ``query`` is the right rewrite of ``turn``."""
    lower = query.lower()
    if turn["follow_up"]:
        keeps = turn.get("keeps", [])
        assert isinstance(keeps, list)
        return all(str(w).lower() in lower for w in keeps)
    drops = turn.get("drops", [])
    assert isinstance(drops, list)
    return not any(str(w).lower() in lower for w in drops)


def main(argv: list[str]) -> None:
    path = Path(argv[0]) if argv else DEFAULT
    rewriter = QueryRewriter()
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    wrong = []
    for line in path.read_text(encoding="utf-8").splitlines():
        conversation = json.loads(line)
        turns = conversation["turns"]
        history: list[Turn] = []
        for earlier in turns[:-1]:
            history += [Turn("user", earlier["question"]), Turn("assistant", "…")]
        last = turns[-1]
        query = rewriter.rewrite(last["question"], history).query
        kind = "follow-up" if last["follow_up"] else "topic change"
        ok = judge(last, query)
        for key in (kind, f"{kind} ({conversation['set']})", "all"):
            total[key] += 1
            right[key] += ok
        if not ok:
            wrong.append(f"{conversation['id']} [{kind}] {last['question']!r} -> {query!r}")
    for key in sorted(total):
        print(f"{key:<40} {right[key]:>3} / {total[key]:<3} right")
    for line in wrong:
        print("wrong:", line)


if __name__ == "__main__":
    main(sys.argv[1:])
