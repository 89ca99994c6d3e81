import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assistant.retrieval.lexical import (
    FieldedLexicalIndex,
    LexicalIndex,
    PatchedLexicalIndex,
    path_words,
    query_terms,
    tokenize,
)


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
    # The code is also one term ("fee12b"), as "FEE12B" would be typed.
    assert tokenize("Fee code FEE-12B, clause 7") == [
        *("fee", "code", "fee", "12b", "claus", "7", "fee12b")
    ]


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


def test_path_words_split_folders_and_file_name_without_extension() -> None:
    got = path_words("privacy-policies/github-candidate-privacy-policy.md")
    assert got == "privacy policies github candidate privacy policy"
    assert path_words("hr/Parental_Leave.v2.pdf") == "hr Parental Leave v2"


def test_title_field_lifts_the_document_a_question_names_by_its_title() -> None:
    # The body that says "refund" most loses to the document titled with the question's words.
    texts = ["refund refund of fees is paid monthly", "claims are paid within ten days"]
    titles = ["Fees\nfinance fees", "Refund of travel costs\nhr travel refunds"]
    index = FieldedLexicalIndex(texts, titles)
    body_only = index.scores("refund of travel", title_weight=0.0)
    fielded = index.scores("refund of travel", title_weight=1.0)
    assert body_only.argmax() == 0
    assert fielded.argmax() == 1


def test_title_weight_zero_scores_like_the_body_index_alone() -> None:
    texts = ["annual leave policy", "expense claims", "leave for travel"]
    index = FieldedLexicalIndex(texts, ["Leave", "Leave", "Travel"])
    np.testing.assert_allclose(
        index.scores("leave travel", title_weight=0.0), LexicalIndex(texts).scores("leave travel")
    )


def test_title_field_idf_counts_documents_not_chunks() -> None:
    # Ten chunks of one long document must not make the words of its title look common.
    titles = ["Sick leave\nhr sick leave"] * 10 + ["Per diem\ntravel", "Card fees\nfees"]
    index = FieldedLexicalIndex(["text"] * 12, titles)
    assert index.titles.size == 3
    scores = index.scores("sick", title_weight=1.0)
    assert scores[:10].min() == scores[:10].max() > 0
    assert scores[10:].max() == 0


def test_query_terms_drop_question_words_but_keep_us_and_may() -> None:
    assert query_terms("How can I get my trip refunded?") == ["get", "trip", "refund"]
    question = "Does support staff in the US start from May?"
    assert query_terms(question) == ["support", "staff", "us", "start", "from", "may"]


def test_question_words_do_not_outscore_the_passage_on_the_topic() -> None:
    texts = [
        "You can ask what you need, and how, when you have questions you can raise.",
        "Trip costs are refunded within thirty days of the claim.",
    ]
    index = FieldedLexicalIndex(texts, ["Help", "Travel"])
    question = "How can you have your trip refunded?"
    assert LexicalIndex(texts).scores(question).argmax() == 0  # plain BM25 is fooled
    assert index.scores(question, title_weight=0.25).argmax() == 1


def test_query_terms_drop_the_tails_of_contractions() -> None:
    question = "I'll be staying in Crimea. I'm 15 and don't know GitHub's rules"
    assert query_terms(question) == ["stay", "crimea", "15", "know", "github", "rule"]


def test_contraction_tails_do_not_outscore_the_passage_on_the_topic() -> None:
    texts = [
        "You'll see that we'll tell you what you'll need; you'll find it and you'll do it.",
        "Travel to sanctioned regions such as Crimea may restrict an account.",
        "Accounts are personal.",
    ]
    index = FieldedLexicalIndex(texts, ["Help", "Trade", "Accounts"])
    question = "I'll be in Crimea, will that affect my account?"
    assert LexicalIndex(texts).scores(question).argmax() == 0  # plain BM25 is fooled
    assert index.scores(question, title_weight=0.25).argmax() == 1


COVERAGE_TEXTS = [
    "Sick leave needs a doctor's note after three days.",
    "Annual leave is booked with your manager.",
    "Leave leave leave: every kind of leave is listed here.",
    "The canteen opens at noon.",
]


def test_coverage_is_the_idf_weighted_share_of_the_question_terms_a_row_holds() -> None:
    index = FieldedLexicalIndex(COVERAGE_TEXTS, ["Leave"] * 3 + ["Canteen"])
    shares = index.coverage("When does sick leave need a doctor's note?")
    assert shares[0] == pytest.approx(1.0)
    assert shares[3] == 0.0
    # "leave" is in three rows, "sick" in one: holding the rare term counts for more.
    assert shares[1] == shares[2] < 0.5
    assert FieldedLexicalIndex(COVERAGE_TEXTS, ["x"] * 4).coverage("note sick")[0] == 1.0


def test_a_word_no_row_uses_lowers_every_rows_coverage() -> None:
    index = FieldedLexicalIndex(COVERAGE_TEXTS, ["Leave"] * 4)
    assert index.coverage("sick note")[0] == pytest.approx(1.0)
    assert index.coverage("sick note for my hamster")[0] < 0.6


def test_coverage_of_a_patched_index_is_that_of_a_full_build() -> None:
    root = FieldedLexicalIndex(COVERAGE_TEXTS[:2], ["Leave"] * 2)
    rows = np.array([0, -1, 1, -1], dtype=np.int64)
    added = [COVERAGE_TEXTS[2], COVERAGE_TEXTS[3]]
    patched = PatchedLexicalIndex(root, rows, added, ["Leave", "Canteen"])
    full = FieldedLexicalIndex(
        [COVERAGE_TEXTS[0], added[0], COVERAGE_TEXTS[1], added[1]],
        ["Leave", "Leave", "Leave", "Canteen"],
    )
    question = "Is sick leave listed at the canteen?"
    np.testing.assert_allclose(patched.coverage(question), full.coverage(question), rtol=1e-6)


@settings(max_examples=40, deadline=None)
@given(
    texts=st.lists(st.lists(words, min_size=1, max_size=8).map(" ".join), min_size=1, max_size=8),
    query=st.lists(words, min_size=1, max_size=4).map(" ".join),
)
def test_coverage_agrees_with_reference_on_random_corpora(texts: list[str], query: str) -> None:
    docs = [set(tokenize(t)) for t in texts]
    terms = list(dict.fromkeys(query_terms(query)))
    weights = {
        t: math.log(1 + (len(docs) - (df := sum(t in d for d in docs)) + 0.5) / (df + 0.5))
        for t in terms
    }
    total = sum(weights.values())
    expected = [sum(w for t, w in weights.items() if t in d) / total if total else 0 for d in docs]
    got = FieldedLexicalIndex(texts, ["x"] * len(texts)).coverage(query)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_a_name_typed_without_its_joint_finds_the_text_that_writes_it() -> None:
    index = LexicalIndex(
        ["Sourcegraph matches 401(k) contributions up to 4%.", "Health plans cover dental."]
    )
    scores = index.scores("Does Sourcegraph match 401k contributions?")
    assert scores[0] > 0
    assert "401k" in tokenize("the 401(k) plan")
    assert "w2" in query_terms("Where is my W-2?")
