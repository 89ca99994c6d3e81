"""Train the late reader's head on the reader pairs; write its weights and model card figures.

The reader (`assistant.embeddings.late_reader`) reads a question against a
passage from the packaged MiniLM's word-piece vectors: each question piece
attends over the passage's pieces (a learned projection), is compared with
what it found (its vector, the attended vector, their product and difference,
its best and top-3 cosines), and a learned importance per piece pools those
comparisons into one logit; Platt scaling on the dev split makes it a
probability. MiniLM itself stays frozen, so training needs the vectors once
(`bench/reader_vectors.py`) and then minutes on two cores. Usage, in a venv
with torch (the ``train`` extra)::

    PYTHONPATH=. python -m bench.train_late_reader data/training/reader/pairs.jsonl \\
        bench/out/reader-vectors.npz [--out assistant/embeddings/late_reader.npz]

It reports the AUC on the dev split and for each corpus held out (a head
trained on the other three), beside MiniLM cosine and max-sim on the same pairs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

logger = logging.getLogger(__name__)
SEED = 20261208
_HIDDEN = 64
_MAX_QUESTION = 48
_MAX_PASSAGE = 254


@dataclass(frozen=True)
class Pair:
    question: int
    passage: int
    label: float
    split: str
    corpus: str
    style: str
    cosine: float


class Vectors:
    """The word-piece vectors of every text, by text."""

    def __init__(self, path: Path) -> None:
        data = np.load(path, allow_pickle=True)
        self.index = {str(t): i for i, t in enumerate(data["texts"])}
        self.vectors = torch.from_numpy(data["vectors"].astype(np.float32))
        self.starts = data["starts"]

    def of(self, row: int, limit: int) -> torch.Tensor:
        start, end = int(self.starts[row]), int(self.starts[row + 1])
        return self.vectors[start : min(end, start + limit)]


class Head(nn.Module):
    """Compare each question piece with what it attends to in the passage; pool by importance."""

    def __init__(self, dim: int = 384, hidden: int = _HIDDEN) -> None:
        super().__init__()
        self.project = nn.Linear(dim, hidden, bias=False)
        self.compare = nn.Linear(4 * dim + 2, hidden)
        self.score = nn.Linear(hidden, 1)
        self.importance = nn.Linear(dim, 1)
        self.drop = nn.Dropout(0.1)

    def forward(
        self, q: torch.Tensor, qmask: torch.Tensor, p: torch.Tensor, pmask: torch.Tensor
    ) -> torch.Tensor:
        sims = q @ p.transpose(1, 2)  # cosines: the vectors are unit length
        sims = sims.masked_fill(~pmask[:, None, :], -1.0)
        att = self.project(q) @ self.project(p).transpose(1, 2) / math.sqrt(_HIDDEN)
        att = att.masked_fill(~pmask[:, None, :], -1e4).softmax(-1)
        found = att @ p
        best = sims.max(-1).values
        top3 = sims.topk(min(3, sims.shape[-1]), dim=-1).values.mean(-1)
        features = torch.cat(
            [q, found, q * found, (q - found).abs(), best[..., None], top3[..., None]], -1
        )
        token = self.score(self.drop(torch.relu(self.compare(self.drop(features))))).squeeze(-1)
        weight = self.importance(q).squeeze(-1).masked_fill(~qmask, -1e4).softmax(-1)
        return (weight * token).sum(-1)


def load_pairs(path: Path, vectors: Vectors) -> list[Pair]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [
        Pair(
            vectors.index[r["question"]],
            vectors.index[r["passage"]],
            float(r["label"]),
            r["split"],
            r["corpus"],
            r["style"],
            float(r.get("cosine", 0.0)),
        )
        for r in rows
    ]


def batch(pairs: Sequence[Pair], vectors: Vectors) -> tuple[torch.Tensor, ...]:
    qs = [vectors.of(p.question, _MAX_QUESTION) for p in pairs]
    ps = [vectors.of(p.passage, _MAX_PASSAGE) for p in pairs]
    return (*_pad(qs), *_pad(ps), torch.tensor([p.label for p in pairs]))


def _pad(rows: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    longest = max(1, *(len(r) for r in rows))
    out = torch.zeros(len(rows), longest, rows[0].shape[1])
    mask = torch.zeros(len(rows), longest, dtype=torch.bool)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
        mask[i, : len(r)] = True
    return out, mask


def train(pairs: Sequence[Pair], vectors: Vectors, *, epochs: int, seed: int = SEED) -> Head:
    torch.manual_seed(seed)
    rng = random.Random(seed)
    head = Head()
    optimiser = torch.optim.AdamW(head.parameters(), lr=2e-3, weight_decay=1e-2)
    order = list(pairs)
    steps = epochs * math.ceil(len(order) / 64)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, max_lr=2e-3, total_steps=steps)
    loss_fn = nn.BCEWithLogitsLoss()
    for epoch in range(epochs):
        head.train()
        rng.shuffle(order)
        total = 0.0
        for start in range(0, len(order), 64):
            q, qm, p, pm, y = batch(order[start : start + 64], vectors)
            loss = loss_fn(head(q, qm, p, pm), y)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            total += float(loss.detach()) * len(y)
        logger.info("epoch %d loss %.4f", epoch + 1, total / len(order))
    head.eval()
    return head


def logits(head: Head, pairs: Sequence[Pair], vectors: Vectors) -> np.ndarray:
    out = []
    with torch.no_grad():
        for start in range(0, len(pairs), 256):
            q, qm, p, pm, _ = batch(pairs[start : start + 256], vectors)
            out.append(head(q, qm, p, pm).numpy())
    return np.concatenate(out) if out else np.zeros(0)


def auc(scores: np.ndarray, y: np.ndarray) -> float:
    pos, neg = scores[y == 1], scores[y == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).mean()
    ties = (pos[:, None] == neg[None, :]).mean()
    return float(greater + ties / 2)


def platt(scores: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Fit p = sigmoid(a * s + b) by Newton's method (a small L2 keeps it finite)."""
    a, b = 1.0, 0.0
    for _ in range(100):
        p = 1 / (1 + np.exp(-(a * scores + b)))
        g = np.array([((p - y) * scores).sum() + 1e-3 * a, (p - y).sum()])
        w = p * (1 - p)
        h = np.array(
            [
                [(w * scores * scores).sum() + 1e-3, (w * scores).sum()],
                [(w * scores).sum(), w.sum()],
            ]
        )
        step = np.linalg.solve(h, g)
        a, b = a - step[0], b - step[1]
        if np.abs(step).max() < 1e-9:
            break
    return float(a), float(b)


def max_sim(pairs: Sequence[Pair], vectors: Vectors) -> np.ndarray:
    out = []
    for pair in pairs:
        q, p = vectors.of(pair.question, _MAX_QUESTION), vectors.of(pair.passage, _MAX_PASSAGE)
        out.append(float((q @ p.T).max(-1).values.mean()))
    return np.asarray(out)


def report(
    name: str, scores: np.ndarray, pairs: Sequence[Pair], vectors: Vectors
) -> dict[str, float]:
    y = np.asarray([p.label for p in pairs])
    cos = np.asarray([p.cosine for p in pairs])
    ms = max_sim(pairs, vectors)
    figures = {"reader": auc(scores, y), "cosine": auc(cos, y), "max_sim": auc(ms, y)}
    logger.info(
        "%s: AUC reader %.3f, cosine %.3f, max-sim %.3f (%d pairs)",
        name,
        *figures.values(),
        len(pairs),
    )
    for style in sorted({p.style for p in pairs}):
        pick = np.asarray([p.style == style or p.label == 1 for p in pairs])
        if style in {"policy", "everyday", "faq"}:
            pick = np.asarray([p.style == style or p.label == 0 for p in pairs])
        logger.info(
            "  %s: reader %.3f cosine %.3f",
            style,
            auc(scores[pick], y[pick]),
            auc(cos[pick], y[pick]),
        )
    return figures


def export(head: Head, a: float, b: float, out: Path, card: dict[str, object]) -> None:
    state = {k: v.detach().numpy().astype(np.float32) for k, v in head.state_dict().items()}
    np.savez(
        out,
        **{k.replace(".", "_"): v for k, v in state.items()},
        platt=np.asarray([a, b], np.float32),
    )
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    card = {**card, "file": out.name, "sha256": digest, "platt": [a, b]}
    out.with_suffix(".json").write_text(json.dumps(card, indent=1) + "\n", encoding="utf-8")
    logger.info("wrote %s (%d bytes, sha256 %s)", out, out.stat().st_size, digest)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("pairs", type=Path)
    parser.add_argument("vectors", type=Path)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--out", type=Path, default=Path("assistant/embeddings/late_reader.npz"))
    parser.add_argument(
        "--folds", action="store_true", help="also train one head per corpus held out"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(2)
    vectors = Vectors(args.vectors)
    pairs = load_pairs(args.pairs, vectors)
    folds: dict[str, dict[str, float]] = {}
    if args.folds:
        for corpus in sorted({p.corpus for p in pairs}):
            head = train([p for p in pairs if p.corpus != corpus], vectors, epochs=args.epochs)
            held = [p for p in pairs if p.corpus == corpus]
            folds[corpus] = report(f"held out {corpus}", logits(head, held, vectors), held, vectors)
    trained = [p for p in pairs if p.split == "train"]
    dev = [p for p in pairs if p.split == "dev"]
    head = train(trained, vectors, epochs=args.epochs)
    dev_scores = logits(head, dev, vectors)
    figures = report("dev", dev_scores, dev, vectors)
    a, b = platt(dev_scores, np.asarray([p.label for p in dev]))
    card = {
        "seed": SEED,
        "epochs": args.epochs,
        "pairs": hashlib.sha256(args.pairs.read_bytes()).hexdigest(),
        "train_pairs": len(trained),
        "dev_pairs": len(dev),
        "dev_auc": figures,
        "held_out_corpus_auc": folds,
        "max_question_pieces": _MAX_QUESTION,
        "max_passage_pieces": _MAX_PASSAGE,
    }
    export(head, a, b, args.out, card)


if __name__ == "__main__":
    main()
