"""Check the reader's training questions and keep the dev questions out of them.

Reads every ``data/training/reader/questions-*.jsonl`` and:

1. validates each record: the fields and their types, ``label`` 0 or 1, a known
   ``style`` whose label agrees (near misses are 0, the others 1), a unique ``id``,
   a non-empty passage, and, where ``bench/out/passages-<corpus>.jsonl`` was
   dumped (``bench/reader_passages.py``), a passage equal to the dumped text of
   its ``chunk_id``;
2. drops (rewriting the file) every question equal or near-equal to a question in
   ``data/eval/*.jsonl``: the same after normalising (lower case, words only),
   or a token Jaccard similarity of at least 0.8, so no dev question is trained on;
3. prints the counts per corpus, style and label.

Exit status 1 if any record is invalid (nothing is rewritten then).

Usage, from the repository root::

    PYTHONPATH=$PWD .venv/bin/python bench/reader_data_check.py
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

__all__ = ["eval_questions", "jaccard", "near_duplicate", "problems", "tokens"]

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "training" / "reader"
EVAL = ROOT / "data" / "eval"
DUMPS = ROOT / "bench" / "out"
NEAR = 0.8
STYLES = {"policy": 1, "everyday": 1, "faq": 1, "near_miss": 0, "other_place": 0}
FIELDS: dict[str, type | tuple[type, ...]] = {
    "id": str,
    "corpus": str,
    "file": str,
    "heading_path": list,
    "chunk_id": str,
    "passage": str,
    "question": str,
    "label": int,
    "style": str,
    "author": str,
}
_WORD = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> tuple[str, ...]:
    """Lower-cased words of ``text``: the normal form both comparisons use."""
    return tuple(_WORD.findall(text.lower()))


def jaccard(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    """Token-set Jaccard similarity (1.0 for two empty texts)."""
    left, right = set(a), set(b)
    union = left | right
    return len(left & right) / len(union) if union else 1.0


def near_duplicate(question: str, held_out: list[tuple[str, ...]]) -> bool:
    """True if ``question`` equals or nearly equals one of the held-out questions."""
    mine = tokens(question)
    return any(mine == other or jaccard(mine, other) >= NEAR for other in held_out)


def _questions_in(value: object) -> Iterator[str]:
    # Dev records hold questions at several depths (turns, follow-ups): take them all.
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("question", "follow_up") and isinstance(item, str):
                yield item
            else:
                yield from _questions_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _questions_in(item)


def eval_questions(folder: Path = EVAL) -> list[tuple[str, ...]]:
    """Every question of every dev set, normalised."""
    found: list[tuple[str, ...]] = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                found.extend(tokens(q) for q in _questions_in(json.loads(line)))
    return found


@functools.cache
def _dumped(corpus: str) -> dict[str, str] | None:
    # Read once per corpus: every record of the corpus is checked against it.
    path = DUMPS / f"passages-{corpus}.jsonl"
    if not path.exists():
        return None
    records = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())
    return {r["chunk_id"]: r["text"] for r in records}


def problems(record: dict[str, object], passages: dict[str, str] | None) -> list[str]:
    """What is wrong with one record (empty if nothing)."""
    found = [
        f"{name}: missing or not {kind}"
        for name, kind in FIELDS.items()
        if not isinstance(record.get(name), kind)
    ]
    if found:
        return found
    style, label = record["style"], record["label"]
    if style not in STYLES:
        found.append(f"unknown style {style!r}")
    elif STYLES[str(style)] != label:
        found.append(f"style {style} with label {label}")
    if not str(record["passage"]).strip() or not str(record["question"]).strip():
        found.append("empty passage or question")
    if not str(record["id"]).startswith(f"{record['corpus']}-"):
        found.append("id does not start with the corpus")
    if passages is not None and passages.get(str(record["chunk_id"])) != record["passage"]:
        found.append("passage differs from the dumped chunk (or the chunk is gone)")
    return found


def main() -> int:
    held_out = eval_questions()
    counts: Counter[tuple[str, str, int]] = Counter()
    chunks: dict[str, set[str]] = {}
    invalid, dropped, seen = 0, 0, set()
    for path in sorted(DATA.glob("questions-*.jsonl")):
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        kept = []
        for number, line in enumerate(lines, 1):
            record = json.loads(line)
            passages = _dumped(str(record.get("corpus")))
            issues = problems(record, passages)
            if record.get("id") in seen:
                issues.append("duplicate id")
            seen.add(record.get("id"))
            if issues:
                invalid += 1
                print(f"{path.name}:{number}: {'; '.join(issues)}")
                continue
            if near_duplicate(str(record["question"]), held_out):
                dropped += 1
                print(f"{path.name}:{number}: dropped, near a dev question")
                continue
            kept.append(line)
            chunks.setdefault(str(record["corpus"]), set()).add(str(record["chunk_id"]))
            counts[(str(record["corpus"]), str(record["style"]), int(record["label"]))] += 1
        if not invalid and len(kept) != len(lines):
            path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    _report(counts, dropped=dropped, invalid=invalid)
    print("passages: " + ", ".join(f"{k} {len(v)}" for k, v in sorted(chunks.items())))
    return 1 if invalid else 0


def _report(counts: Counter[tuple[str, str, int]], *, dropped: int, invalid: int) -> None:
    for name, index in (("corpus", 0), ("style", 1), ("label", 2)):
        tally: Counter[str] = Counter()
        for key, n in counts.items():
            tally[str(key[index])] += n
        print(f"by {name}: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))
    print(f"total {sum(counts.values())}; dropped {dropped} near dev questions; invalid {invalid}")


if __name__ == "__main__":
    sys.exit(main())
