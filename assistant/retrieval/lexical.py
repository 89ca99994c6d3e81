"""BM25 keyword search over chunk texts, backed by bm25s (the only importer of it).

Text is lower-cased, split on word characters, stripped of English stopwords and,
when PyStemmer is installed, stemmed with the Snowball English stemmer (no
downloads either way). Exact tokens such as fee codes ("FEE-12B" gives ``fee``
and ``12b``) therefore match exactly, which dense embeddings often miss.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import PurePosixPath

import bm25s
import numpy as np
import numpy.typing as npt
from bm25s.stopwords import STOPWORDS_EN

from assistant.words import compound_words

__all__ = [
    "FieldedLexicalIndex",
    "LexicalIndex",
    "PatchedLexicalIndex",
    "coverage",
    "idf",
    "path_words",
    "query_terms",
    "tokenize",
]

logger = logging.getLogger(__name__)
# bm25s sets its own logger to DEBUG at import; hand the level back to the application.
logging.getLogger("bm25s").setLevel(logging.NOTSET)

_WORD = re.compile(r"\w+")
_PATH_SEPARATORS = re.compile(r"[\W_]+")
_STOPWORDS = frozenset(STOPWORDS_EN)
# bm25s's defaults (method "lucene"), which `_Delta` scores new rows with.
_K1 = 1.5
_B = 0.75


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
    # "401(k)" is also the term "401k", so a question typing either finds the other.
    words += compound_words(text)
    stem = _stemmer()
    return stem(words) if stem is not None and words else words


# Question words, pronouns and auxiliaries that bm25s's stopword list keeps. In a
# question they match the countless passages that also say "you" or "can" and
# push the one that shares its topic down (docs/retrieval-eval.md, 2026-12-01). "us"
# and "may" stay: they are also the US and a month. The tails of contractions ("I'm",
# "I'll", "GitHub's", "don't" split into "i m", "i ll", ...) go too: a question's "ll"
# matched every "you'll" of a corpus and outranked its topic words (2026-12-01, 2).
_QUESTION_WORDS = frozenset(
    tokenize(
        "what whats which who whom whose when where why how does did do doing done can could "
        "would should shall will might must me my mine we our you your i yours he him "
        "his she her they them their is am are was were be been being have has had "
        "m ll s re ve d t don doesn didn isn aren wasn weren won wouldn shouldn couldn haven hasn"
    )
)


def query_terms(question: str) -> list[str]:
    """Return the BM25 terms of a question: `tokenize` without question words and pronouns."""
    return [t for t in tokenize(question) if t not in _QUESTION_WORDS]


def idf(df: int, n: int) -> float:
    """Return BM25's (Lucene) IDF; a term no row contains gets the largest value."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def coverage(
    terms: Sequence[str],
    rows_with: Callable[[str], npt.NDArray[np.int64]],
    *,
    document_frequency: Mapping[str, int],
    size: int,
) -> npt.NDArray[np.float32]:
    """Return per row the IDF-weighted share of the distinct ``terms`` the row contains.

    BM25 adds up what each term contributes, so a row that repeats one query
    word can outscore a row that has them all; the share says how much of the
    question a row speaks to (1.0: every term). A term no row contains still
    counts in the total, so a question with a word the corpus never uses is
    covered less everywhere.

    Args:
        terms: The question's terms (`query_terms`).
        rows_with: The rows that contain a term.
        document_frequency: How many rows contain each term.
        size: How many rows.
    """
    distinct = list(dict.fromkeys(t for t in terms if t))
    weights = [idf(document_frequency.get(t, 0), size) for t in distinct]
    total = sum(weights)
    out = np.zeros(size, dtype=np.float32)
    if total <= 0:
        return out
    for term, weight in zip(distinct, weights, strict=True):
        if document_frequency.get(term, 0):
            out[rows_with(term)] += np.float32(weight / total)
    return out


def path_words(source: str) -> str:
    """Return the words of a source path, folders included, without its extension.

    ``privacy-policies/github-candidate-privacy-policy.md`` gives ``privacy policies
    github candidate privacy policy``: file names often say what a page is about in
    the words people ask with, even where its title does not.
    """
    stem = str(PurePosixPath(source).with_suffix(""))
    return " ".join(w for w in _PATH_SEPARATORS.split(stem) if w)


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
        self.average_length = sum(map(len, corpus)) / len(corpus) if corpus else 0.0
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
        return self.term_scores(tokenize(query))

    def term_scores(self, terms: Sequence[str]) -> npt.NDArray[np.float32]:
        """Return the BM25 score of every row for already tokenized query ``terms``."""
        if self._model is None:
            return np.zeros(self.size, dtype=np.float32)
        vocab: dict[str, int] = self._model.vocab_dict
        ids = sorted({vocab[t] for t in terms if t in vocab and t})
        if not ids:
            return np.zeros(self.size, dtype=np.float32)
        raw = self._model.get_scores_from_ids(ids)
        return np.asarray(raw, dtype=np.float32)

    def rows_with(self, term: str) -> npt.NDArray[np.int64]:
        """Return the rows that contain ``term`` (an already tokenized term), ascending.

        Read from bm25s's posting lists, so the cost is the term's frequency, not the
        index size.
        """
        if self._model is None or term not in self._model.vocab_dict:
            return np.zeros(0, dtype=np.int64)
        token = self._model.vocab_dict[term]
        postings = self._model.scores
        start, end = postings["indptr"][token], postings["indptr"][token + 1]
        return np.asarray(postings["indices"][start:end], dtype=np.int64)


class FieldedLexicalIndex:
    """BM25 over chunk texts plus a separately weighted BM25 over each row's title field.

    A policy is found by its name as much as by its body, but in the body index
    a title is a few words among hundreds, and the words of a file name
    (``whistleblowing-policy.md``) are in no chunk at all. The title field (the
    document title and the words of its source path, see
    `assistant.retrieval.view.title_field`) is indexed once per distinct value,
    so its IDF counts documents, not chunks, and a long document does not make
    its own name look common. A row scores ``body + title_weight * title``.

    ``document_frequency`` is the body index's (chunk texts).
    """

    def __init__(self, texts: Sequence[str], titles: Sequence[str]) -> None:
        """Build both indexes.

        Args:
            texts: The chunk texts, in row order.
            titles: Each row's title field, in row order (as many as ``texts``).
        """
        if len(texts) != len(titles):
            raise ValueError(f"{len(texts)} texts but {len(titles)} title fields")
        self.size = len(texts)
        self.body = LexicalIndex(texts)
        distinct = list(dict.fromkeys(titles))
        position = {t: i for i, t in enumerate(distinct)}
        self.titles = LexicalIndex(distinct)
        self._title_of_row = np.array([position[t] for t in titles], dtype=np.int64)

    @property
    def document_frequency(self) -> dict[str, int]:
        """Return how many chunk texts contain each term."""
        return self.body.document_frequency

    def scores(self, query: str, *, title_weight: float) -> npt.NDArray[np.float32]:
        """Return ``body + title_weight * title`` BM25 per row for ``query``.

        The question's terms are `query_terms`, so question words do not score.

        Args:
            query: The question as typed.
            title_weight: The title field's weight next to the body (0: body only).
        """
        terms = query_terms(query)
        body = self.body.term_scores(terms)
        if title_weight <= 0 or self.size == 0:
            return body
        title = self.titles.term_scores(terms)[self._title_of_row]
        combined: npt.NDArray[np.float32] = body + np.float32(title_weight) * title
        return combined

    def coverage(self, query: str) -> npt.NDArray[np.float32]:
        """Return per row the IDF-weighted share of the question's terms its text holds.

        See `coverage`; over chunk texts (heading path and body), with the body's IDF.
        """
        return coverage(
            query_terms(query),
            self.body.rows_with,
            document_frequency=self.body.document_frequency,
            size=self.size,
        )


class _Delta:
    """BM25 of a few rows added since an index was built, under that index's statistics.

    bm25s cannot add documents to a built index; these rows are scored with the
    same formula (Lucene IDF, Robertson term frequency) from the base index's
    document count, frequencies and average length, counting the new rows too.
    """

    def __init__(self, base: LexicalIndex, texts: Sequence[str]) -> None:
        self._terms = [Counter(tokenize(t)) for t in texts]
        self._norm = [
            _K1 * ((1 - _B) + _B * sum(c.values()) / (base.average_length or 1.0))
            for c in self._terms
        ]
        self.frequency: Counter[str] = Counter()
        for counts in self._terms:
            self.frequency.update(counts.keys())
        self._base_frequency = base.document_frequency
        self._documents = base.size + len(texts)

    def rows_with(self, term: str) -> npt.NDArray[np.int64]:
        if term not in self.frequency:
            return np.zeros(0, dtype=np.int64)
        return np.array([r for r, c in enumerate(self._terms) if term in c], dtype=np.int64)

    def term_scores(self, terms: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros(len(self._terms), dtype=np.float32)
        for term in set(terms):
            if term not in self.frequency:
                continue
            df = self._base_frequency.get(term, 0) + self.frequency[term]
            idf = math.log(1 + (self._documents - df + 0.5) / (df + 0.5))
            for row, counts in enumerate(self._terms):
                tf = counts.get(term, 0)
                if tf:
                    out[row] += idf * tf / (self._norm[row] + tf)
        return out


class PatchedLexicalIndex:
    """A `FieldedLexicalIndex` built for an earlier snapshot, brought to a patched one.

    Rows kept from the index's own snapshot score from it (``root_rows`` maps
    each row to its row there); rows added since score with `_Delta`. So an
    ingest that edits one document costs a reader no BM25 rebuild, which at
    100k chunks takes seconds of CPU (and of the interpreter lock that the
    questions in flight need). The statistics of the removed rows linger until
    the next full build: negligible for a few documents in many.
    """

    def __init__(
        self,
        root: FieldedLexicalIndex,
        root_rows: npt.NDArray[np.int64],
        texts: Sequence[str],
        titles: Sequence[str],
    ) -> None:
        """Wrap ``root``; ``root_rows`` gives each row's root row, -1 for the added rows.

        ``texts`` and ``titles`` are the added rows' chunk texts and title fields, in row order.
        """
        self.root = root
        self.root_rows = root_rows
        self.size = int(root_rows.size)
        self.added = np.flatnonzero(root_rows < 0)
        if self.added.size != len(texts) or len(texts) != len(titles):
            raise ValueError(f"{self.added.size} added rows but {len(texts)} texts")
        self._body = _Delta(root.body, texts)
        self._titles = _Delta(root.titles, titles)
        self._kept = np.where(root_rows < 0, 0, root_rows)
        # Each root row's row here; -1 for rows removed since the root was built.
        self._row_of_root = np.full(root.size, -1, dtype=np.int64)
        self._row_of_root[root_rows[root_rows >= 0]] = np.flatnonzero(root_rows >= 0)
        frequency = dict(root.document_frequency)
        for term, count in self._body.frequency.items():
            frequency[term] = frequency.get(term, 0) + count
        self._frequency = frequency

    @property
    def document_frequency(self) -> dict[str, int]:
        """Return how many chunk texts contain each term (removed rows still counted)."""
        return self._frequency

    def scores(self, query: str, *, title_weight: float) -> npt.NDArray[np.float32]:
        """Return ``body + title_weight * title`` BM25 per row, as `FieldedLexicalIndex`."""
        out = self.root.scores(query, title_weight=title_weight)[self._kept]
        if self.added.size:
            terms = query_terms(query)
            added = self._body.term_scores(terms)
            if title_weight > 0:
                added = added + np.float32(title_weight) * self._titles.term_scores(terms)
            out[self.added] = added
        return out

    def coverage(self, query: str) -> npt.NDArray[np.float32]:
        """Return per row the share of the question's terms its text holds (see `coverage`)."""

        def rows_with(term: str) -> npt.NDArray[np.int64]:
            kept = self._row_of_root[self.root.body.rows_with(term)]
            return np.concatenate([kept[kept >= 0], self.added[self._body.rows_with(term)]])

        return coverage(
            query_terms(query),
            rows_with,
            document_frequency=self._frequency,
            size=self.size,
        )
