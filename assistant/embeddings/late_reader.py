"""The reader: how likely a passage answers a question, from MiniLM's word pieces.

A small head trained for policy questions (`bench/train_late_reader.py`,
docs/reader-model.md) over the packaged MiniLM's word-piece vectors, the same
model run the offline ranking makes: each question piece attends over the
passage's pieces, is compared with what it found (its vector, the attended
one, their product and difference, its best and top-3 cosines), and a learned
importance per piece pools the comparisons into one logit, made a probability
by the Platt scaling fitted on held-out pairs. The weights (``late_reader.npz``
beside this module, about 0.6 MB) are checked against the sha256 of their
manifest (``late_reader.json``) when loaded.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from assistant.errors import EmbeddingError
from assistant.protocols import TokenEmbedder

__all__ = ["WEIGHTS_FILE", "LateReader", "load_reader"]

logger = logging.getLogger(__name__)

WEIGHTS_FILE = Path(__file__).with_name("late_reader.npz")
Array = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class _Weights:
    project: Array  # (hidden, dim)
    compare: Array  # (hidden, 4 * dim + 2)
    compare_bias: Array
    score: Array  # (1, hidden)
    score_bias: float
    importance: Array  # (1, dim)
    importance_bias: float
    platt: tuple[float, float]
    max_question: int
    max_passage: int
    sha256: str


class LateReader:
    """A `Reader` over a token embedder's word-piece vectors and the shipped head."""

    def __init__(self, embedder: TokenEmbedder, weights: _Weights) -> None:
        self._embedder = embedder
        self._w = weights

    @property
    def identity(self) -> str:
        """Return ``reader:late-minilm:SHA8`` (the weights file's hash)."""
        return f"reader:late-minilm:{self._w.sha256[:8]}"

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        """Return the probability that each passage answers ``question`` (one model run).

        Raises:
            EmbeddingError: The embedder failed.
        """
        if not passages:
            return []
        _, tokens = self._embedder.embed_tokens([question, *passages])
        q = tokens[0].vectors[: self._w.max_question]
        if not len(q):
            return [0.0] * len(passages)
        return [self._probability(q, t.vectors[: self._w.max_passage]) for t in tokens[1:]]

    def _probability(self, q: Array, p: Array) -> float:
        w = self._w
        if not len(p):
            return 0.0
        sims = q @ p.T
        att = (q @ w.project.T) @ (p @ w.project.T).T / math.sqrt(w.project.shape[0])
        att = np.exp(att - att.max(axis=1, keepdims=True))
        att /= att.sum(axis=1, keepdims=True)
        found = att @ p
        best = sims.max(axis=1, keepdims=True)
        top = np.sort(sims, axis=1)[:, -min(3, sims.shape[1]) :].mean(axis=1, keepdims=True)
        features = np.concatenate([q, found, q * found, np.abs(q - found), best, top], axis=1)
        hidden = np.maximum(features @ w.compare.T + w.compare_bias, 0.0)
        token = (hidden @ w.score.T)[:, 0] + w.score_bias
        weight = (q @ w.importance.T)[:, 0] + w.importance_bias
        weight = np.exp(weight - weight.max())
        logit = float((weight / weight.sum() * token).sum())
        a, b = w.platt
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, a * logit + b))))


def load_reader(embedder: TokenEmbedder, path: Path = WEIGHTS_FILE) -> LateReader:
    """Return the shipped reader over ``embedder`` (the packaged MiniLM).

    Raises:
        EmbeddingError: The weights file or its manifest is missing, does not
            match the manifest's sha256, or is malformed (a broken install).
    """
    return LateReader(embedder, _load_weights(path))


@functools.cache
def _load_weights(path: Path) -> _Weights:
    manifest = path.with_suffix(".json")
    try:
        data = path.read_bytes()
        card = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"cannot read the reader model {path}: {exc}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != card.get("sha256"):
        raise EmbeddingError(
            f"the reader model {path} does not match its manifest {manifest.name} "
            f"(sha256 {digest[:12]}…, expected {str(card.get('sha256'))[:12]}…): reinstall"
        )
    try:
        with np.load(path) as arrays:
            a, b = (float(v) for v in arrays["platt"])
            weights = _Weights(
                project=arrays["project_weight"],
                compare=arrays["compare_weight"],
                compare_bias=arrays["compare_bias"],
                score=arrays["score_weight"],
                score_bias=float(arrays["score_bias"][0]),
                importance=arrays["importance_weight"],
                importance_bias=float(arrays["importance_bias"][0]),
                platt=(a, b),
                max_question=int(card["max_question_pieces"]),
                max_passage=int(card["max_passage_pieces"]),
                sha256=digest,
            )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EmbeddingError(f"the reader model {path} is malformed: {exc}") from exc
    logger.debug("reader %s loaded (%d bytes)", path.name, len(data))
    return weights
