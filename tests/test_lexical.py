import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from assistant.retrieval.lexical import LexicalIndex, tokenize


def reference_bm25(
    texts: list[str], query: str, *, k1: float = 1.5, b: float = 0.75
) -> list[float]:
    """Lucene BM25, written out longhand as an oracle."""
    docs = [tokenize(t) for t in texts]
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    if avgdl == 0:
        return [0.0] * n
    scores = []
    for doc in docs:
        total = 0.0
        for term in set(tokenize(query)):
            df = sum(term in d for d in docs)
            if df == 0:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = doc.count(term)
            total += idf * tf / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        scores.append(total)
    return scores


def test_tokenize_lowercases_drops_stopwords_and_stems() -> None:
    assert tokenize("The Refunds of POLICIES") == ["refund", "polici"]


def test_tokenize_keeps_codes_and_numbers_as_terms() -> None:
    assert tokenize("Fee code FEE-12B, clause 7") == ["fee", "code", "fee", "12b", "claus", "7"]


def test_scores_match_reference_bm25() -> None:
    texts = [
        "the cat sat on the mat",
        "dogs and cats play",
        "a fee code FEE-12B applies to late fees",
        "cats cats cats",
    ]
    index = LexicalIndex(texts)
    for query in ("cat fees", "FEE-12B", "late dogs"):
        np.testing.assert_allclose(index.scores(query), reference_bm25(texts, query), rtol=1e-5)


def test_unknown_or_stopword_only_query_scores_zero() -> None:
    index = LexicalIndex(["annual leave policy", "expense claims"])
    assert index.scores("zebra quokka").tolist() == [0.0, 0.0]
    assert index.scores("the and of").tolist() == [0.0, 0.0]


def test_empty_index_scores_nothing() -> None:
    assert LexicalIndex([]).scores("leave").shape == (0,)


words = st.sampled_from(["leave", "annual", "fee", "refund", "travel", "card", "the", "code"])


@settings(max_examples=40, deadline=None)
@given(
    texts=st.lists(st.lists(words, min_size=1, max_size=8).map(" ".join), min_size=1, max_size=8),
    query=st.lists(words, min_size=1, max_size=4).map(" ".join),
)
def test_scores_agree_with_reference_on_random_corpora(texts: list[str], query: str) -> None:
    got = LexicalIndex(texts).scores(query)
    np.testing.assert_allclose(got, reference_bm25(texts, query), rtol=1e-4, atol=1e-6)
