"""How many short follow-ups get their own subject (``data/eval/short_follow_ups.jsonl``).

Usage: ``PYTHONPATH=. python bench/short_follow_ups.py [FILE]``

Each case is a previous question (``history``), a short follow-up ("and for Kisumu?",
"what about maternity?", one word) and what its search query must hold: every word
of ``keeps`` (the previous question's frame and the follow-up's subject) and none of
``drops`` (the previous subject it replaces, or the gibberish before it). The offline
rewriter (`QueryRewriter` without a model) rewrites it as the chat does. Prints the
count right and each wrong rewrite.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from assistant.answering.rewrite import QueryRewriter
from assistant.types import Turn

DEFAULT = Path("data/eval/short_follow_ups.jsonl")


def judge(case: dict[str, object], query: str) -> bool:
    """Return whether ``query`` holds every word of ``keeps`` and none of ``drops``."""
    lower = query.lower()
    keeps, drops = case["keeps"], case["drops"]
    assert isinstance(keeps, list)
    assert isinstance(drops, list)
    return all(str(w).lower() in lower for w in keeps) and not any(
        str(w).lower() in lower for w in drops
    )


def rewritten(case: dict[str, object], rewriter: QueryRewriter) -> str:
    """Return the query the chat searches for the case's follow-up."""
    history: list[Turn] = []
    earlier = case["history"]
    assert isinstance(earlier, list)
    for question in earlier:
        history += [Turn("user", str(question)), Turn("assistant", "…")]
    return rewriter.rewrite(str(case["question"]), history).query


def main(argv: list[str]) -> None:
    path = Path(argv[0]) if argv else DEFAULT
    rewriter = QueryRewriter()
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    wrong = []
    for case in cases:
        query = rewritten(case, rewriter)
        if not judge(case, query):
            wrong.append(f"wrong: {case['id']} {case['question']!r} -> {query!r}")
    sys.stdout.write(f"{len(cases) - len(wrong)} / {len(cases)} right\n")
    sys.stdout.write("".join(line + "\n" for line in wrong))


if __name__ == "__main__":
    main(sys.argv[1:])
