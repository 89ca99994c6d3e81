"""BM25 keyword search over chunk texts, backed by bm25s (the only importer of it).

Text is lower-cased, split on word characters, stripped of English stopwords and,
when PyStemmer is installed, stemmed with the Snowball English stemmer (no
downloads either way). Exact tokens such as fee codes ("FEE-12B" gives ``fee``
and ``12b``) therefore match exactly, which dense embeddings often miss.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache

import bm25s
import numpy as np
import numpy.typing as npt
from bm25s.stopwords import STOPWORDS_EN

__all__ = ["LexicalIndex", "tokenize"]

logger = logging.getLogger(__name__)
# bm25s sets its own logger to DEBUG at import; hand the level back to the application.
logging.getLogger("bm25s").setLevel(logging.NOTSET)

_WORD = re.compile(r"\w+")
_STOPWORDS = frozenset(STOPWORDS_EN)


@lru_cache(maxsize=1)
def _stemmer() -> Callable[[list[str]], list[str]] | None:
    try:
        import Stemmer
    except ImportError:
        logger.info("PyStemmer is not installed; BM25 runs without stemming")
        return None
    stem: Callable[[list[str]], list[str]] = Stemmer.Stemmer("english").stemWords
    return stem


def tokenize(text: str) -> list[str]:
    """Return the BM25 terms of ``text``: lower-cased words, no stopwords, stemmed.

    Args:
        text: Any text (a chunk or a question).

    Returns:
        The terms in order, repeats kept.
    """
    words = [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and w != "_"]
    stem = _stemmer()
    return stem(words) if stem is not None and words else words


class LexicalIndex:
    """A BM25 index over a fixed list of texts; row ``i`` scores ``texts[i]``.

    ``document_frequency`` maps each term to the number of texts containing it.
    """

    def __init__(self, texts: Sequence[str]) -> None:
        """Build the index.

        Args:
            texts: The documents, in row order.
        """
        self.size = len(texts)
        self._model: bm25s.BM25 | None = None
        corpus = [tokenize(t) for t in texts]
        frequency: Counter[str] = Counter()
        for terms in corpus:
            frequency.update(set(terms))
        self.document_frequency: dict[str, int] = dict(frequency)
        # bm25s cannot index a corpus without a single term (it fails on an empty vocabulary).
        if any(corpus):
            model = bm25s.BM25()
            model.index(corpus, show_progress=False)
            self._model = model

    def scores(self, query: str) -> npt.NDArray[np.float32]:
        """Return the BM25 score of every row for ``query`` (0 where no term matches).

        Args:
            query: The question as typed.

        Returns:
            A float32 array of length ``size``.
        """
        if self._model is None:
            return np.zeros(self.size, dtype=np.float32)
        vocab: dict[str, int] = self._model.vocab_dict
        ids = sorted({vocab[t] for t in tokenize(query) if t in vocab and t})
        if not ids:
            return np.zeros(self.size, dtype=np.float32)
        raw = self._model.get_scores_from_ids(ids)
        return np.asarray(raw, dtype=np.float32)
