"""Build the reader's (question, passage, label) training pairs, deterministically.

Reads ``data/training/reader/questions-*.jsonl`` (checked by
``bench/reader_data_check.py``, which also keeps the dev questions of
``data/eval/`` out) and the passage dumps ``bench/out/passages-<corpus>.jsonl``
(``bench/reader_passages.py``), and writes ``data/training/reader/pairs.jsonl``:

- every record as a pair: label 1 (the passage answers) and the hand-written
  label 0 near misses;
- for each label-1 question, ``HARD_NEGATIVES`` mined negatives: the passages of
  the same corpus closest to the question by MiniLM cosine that are not its
  passage, not in its section, not its section's parent or child, and not a
  near copy of its passage (sibling sections do count).

Records are joined to the dump by ``chunk_id`` (a heading path is a list, not a
key) and every record's passage must equal its dumped chunk, or nothing is
written. Each pair carries ``split``: ``dev`` for a fixed ``DEV_SHARE`` of the
passages (chosen by a seeded hash of the gold chunk, so a question, its near
misses and its mined negatives stay together), ``train`` otherwise; and
``corpus``, the fold key of a leave-one-corpus-out run. ``cosine`` is MiniLM's
score of the same pair, the baseline every reader figure is compared with.

Usage, from the repository root::

    PYTHONPATH=$PWD .venv/bin/python bench/reader_pairs.py
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from assistant.embeddings.local import OnnxEmbedder

__all__ = ["DEV_SHARE", "HARD_NEGATIVES", "SEED", "is_dev", "related"]

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "training" / "reader"
DUMPS = ROOT / "bench" / "out"
TARGET = DATA / "pairs.jsonl"
SEED = 41
DEV_SHARE = 0.15
HARD_NEGATIVES = 3
NEAR_COPY = 0.8  # token Jaccard above which a mined passage is the gold passage again
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True, slots=True)
class Passage:
    chunk_id: str
    heading_path: tuple[str, ...]
    text: str
    words: frozenset[str]


def is_dev(chunk_id: str, *, seed: int = SEED, share: float = DEV_SHARE) -> bool:
    """Whether the pairs of this gold chunk belong to the fixed dev split."""
    digest = hashlib.sha256(f"{seed}:{chunk_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


def related(gold: Sequence[str], other: Sequence[str]) -> bool:
    """Same section, or one's heading path a prefix of the other's (parent or child)."""
    shorter = min(len(gold), len(other))
    return tuple(gold[:shorter]) == tuple(other[:shorter])


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def _dump(corpus: str) -> list[Passage]:
    path = DUMPS / f"passages-{corpus}.jsonl"
    if not path.exists():
        sys.exit(f"{path} is missing: run bench/reader_passages.py first")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [
        Passage(
            r["chunk_id"],
            tuple(r["heading_path"]),
            r["text"],
            frozenset(_WORD.findall(r["text"].lower())),
        )
        for r in rows
    ]


def _records() -> dict[str, list[dict[str, object]]]:
    by_corpus: dict[str, list[dict[str, object]]] = {}
    for path in sorted(DATA.glob("questions-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                by_corpus.setdefault(str(record["corpus"]), []).append(record)
    return by_corpus


def _pair(
    record: dict[str, object], passage: Passage, label: int, style: str, cosine: float
) -> dict[str, object]:
    return {
        "question_id": record["id"],
        "corpus": record["corpus"],
        "split": "dev" if is_dev(str(record["chunk_id"])) else "train",
        "question": record["question"],
        "chunk_id": passage.chunk_id,
        "passage": passage.text,
        "label": label,
        "style": style,
        "cosine": round(cosine, 6),
    }


def _mined(
    sims: npt.NDArray[np.float32],
    dump: list[Passage],
    gold: Passage,
) -> list[int]:
    picked: list[int] = []
    for index in np.argsort(-sims, kind="stable"):
        candidate = dump[int(index)]
        same = candidate.chunk_id == gold.chunk_id
        if same or related(gold.heading_path, candidate.heading_path):
            continue
        if _jaccard(candidate.words, gold.words) >= NEAR_COPY:
            continue
        picked.append(int(index))
        if len(picked) == HARD_NEGATIVES:
            break
    return picked


def corpus_pairs(
    corpus: str, records: list[dict[str, object]], embedder: OnnxEmbedder
) -> list[dict[str, object]]:
    """Every pair of one corpus: its records, then the mined negatives of its positives."""
    dump = _dump(corpus)
    by_id = {p.chunk_id: i for i, p in enumerate(dump)}
    for record in records:
        index = by_id.get(str(record["chunk_id"]))
        if index is None or dump[index].text != record["passage"]:
            sys.exit(f"{record['id']}: passage differs from the dumped chunk {record['chunk_id']}")
    passages = embedder.embed([p.text for p in dump])
    questions = embedder.embed([str(r["question"]) for r in records])
    sims = questions @ passages.T
    pairs: list[dict[str, object]] = []
    for row, record in enumerate(records):
        gold = by_id[str(record["chunk_id"])]
        label = int(str(record["label"]))
        pairs.append(_pair(record, dump[gold], label, str(record["style"]), float(sims[row, gold])))
        if label == 1:
            for index in _mined(sims[row], dump, dump[gold]):
                pairs.append(_pair(record, dump[index], 0, "mined", float(sims[row, index])))
    return pairs


def main() -> None:
    embedder = OnnxEmbedder()
    pairs: list[dict[str, object]] = []
    for corpus, records in sorted(_records().items()):
        pairs.extend(corpus_pairs(corpus, records, embedder))
    with TARGET.open("w", encoding="utf-8") as out:
        for pair in pairs:
            out.write(json.dumps(pair, ensure_ascii=False) + "\n")
    counts = Counter((str(p["split"]), str(p["style"])) for p in pairs)
    print(f"{len(pairs)} pairs -> {TARGET.relative_to(ROOT)}")
    for key, count in sorted(counts.items()):
        print(f"  {key[0]:5} {key[1]:12} {count}")


if __name__ == "__main__":
    main()
