"""The index embedder with a memo on disk, for the benchmarks that replay cached searches.

`bench/answerability_fit.py`, `bench/offline_answers.py` and
`bench/unknown_word_note.py` embed the same questions and passages run after
run; the memo (``<set>-vectors.pkl`` and its ``.tokens.pkl`` of word-piece
vectors) makes a rerun cost seconds.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from assistant.protocols import Embedder, Reader
from assistant.types import TokenVectors


class CachedEmbedder:
    """The index's embedder with a text -> vector memo (saved with `save`)."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.memo: dict[str, npt.NDArray[np.float32]] = (
            pickle.loads(path.read_bytes()) if path.exists() else {}
        )
        tokens = path.with_suffix(".tokens.pkl")
        self.tokens: dict[str, TokenVectors] = (
            pickle.loads(tokens.read_bytes()) if tokens.exists() else {}
        )
        self.identity = inner.identity
        self.dimension = inner.dimension
        self.max_input_tokens = inner.max_input_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.inner.count_tokens(texts)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        todo = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if todo:
            for text, vector in zip(todo, self.inner.embed(todo), strict=True):
                self.memo[text] = vector
        return np.asarray([self.memo[t] for t in texts], dtype=np.float32)

    def embed_tokens(
        self, texts: Sequence[str]
    ) -> tuple[npt.NDArray[np.float32], list[TokenVectors]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self.tokens]
        if todo:
            vectors, pieces = self.inner.embed_tokens(todo)  # type: ignore[attr-defined]
            for text, vector, piece in zip(todo, vectors, pieces, strict=True):
                self.memo[text] = vector
                self.tokens[text] = piece
        rows = np.asarray([self.memo[t] for t in texts], dtype=np.float32)
        return rows, [self.tokens[t] for t in texts]

    def save(self) -> None:
        self.path.write_bytes(pickle.dumps(self.memo))
        self.path.with_suffix(".tokens.pkl").write_bytes(pickle.dumps(self.tokens))


class CachedReader:
    """A reader with a (question, passage) -> probability memo on disk (saved with `save`)."""

    def __init__(self, inner: Reader, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.memo: dict[tuple[str, str], float] = (
            pickle.loads(path.read_bytes()) if path.exists() else {}
        )
        self.identity = inner.identity

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        todo = [p for p in dict.fromkeys(passages) if (question, p) not in self.memo]
        if todo:
            for passage, value in zip(todo, self.inner.score(question, todo), strict=True):
                self.memo[(question, passage)] = value
        return [self.memo[(question, p)] for p in passages]

    def save(self) -> None:
        self.path.write_bytes(pickle.dumps(self.memo))
