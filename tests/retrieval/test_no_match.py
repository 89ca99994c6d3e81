import pytest
from hypothesis import given
from hypothesis import strategies as st

from assistant.config import RetrievalSettings, Settings
from assistant.errors import ConfigError
from assistant.retrieval.nomatch import (
    NoMatchVerdict,
    content_terms,
    judge,
    question_words,
    term_coverage,
)
from assistant.types import IndexSnapshot
from assistant.words import topic_words
from tests.support.retrieval_helpers import (
    FakeEmbedder,
    make_retriever,
    make_snapshot,
    policy_corpus,
)

OFF_TOPIC = "Are pets welcome at headquarters?"
# Shares no content word with "A refund of trip costs is paid when a trip is cancelled",
# but the fake embedder maps repaid -> refund and journey -> trip.
PARAPHRASE = "Repaid for a called-off journey?"


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def snapshot(embedder: FakeEmbedder) -> IndexSnapshot:
    chunks, docs = policy_corpus()
    return make_snapshot(chunks, docs, embedder=embedder)


def coverage_line(trace: tuple[str, ...]) -> str:
    return next(line for line in trace if line.startswith("coverage "))


def test_question_with_out_of_corpus_terms_is_flagged_and_explained(
    snapshot: IndexSnapshot, embedder: FakeEmbedder
) -> None:
    result = make_retriever(snapshot, embedder).search(OFF_TOPIC)
    assert result.no_good_match
    assert result.hits  # the closest passages are still shown
    line = coverage_line(result.trace)
    assert line.startswith("coverage 0.00 (missing pet, welcom, headquart), top cosine 0.00")
    assert "→ no good match" in line
    assert result.no_match_reason == (
        "none of the closest sections mentions “pets”, “welcome” or “headquarters”, "
        "and none is close in meaning"
    )


def test_search_names_the_question_words_no_chunk_contains(
    snapshot: IndexSnapshot, embedder: FakeEmbedder
) -> None:
    retriever = make_retriever(snapshot, embedder)
    result = retriever.search("Is a refund of trip costs paid in Zorblax?")
    assert result.unknown_words == ("Zorblax",)
    assert retriever.search("Is a refund of trip costs paid?").unknown_words == ()


def test_paraphrase_of_covered_fact_is_not_flagged(
    snapshot: IndexSnapshot, embedder: FakeEmbedder
) -> None:
    result = make_retriever(snapshot, embedder).search(PARAPHRASE)
    assert not result.no_good_match
    assert result.hits[0].chunk.breadcrumb == "Expenses > Refund of trip costs"
    line = coverage_line(result.trace)
    assert line.startswith("coverage 0.00")  # no shared word: the cosine decides
    assert "→ match" in line


def test_lexical_mode_judges_on_coverage_alone(
    snapshot: IndexSnapshot, embedder: FakeEmbedder
) -> None:
    retriever = make_retriever(snapshot, embedder, mode="lexical")
    assert retriever.search(PARAPHRASE).no_good_match
    assert "top cosine n/a" in coverage_line(retriever.search(PARAPHRASE).trace)
    assert not retriever.search("Is a refund paid when a trip is cancelled?").no_good_match


def test_zero_min_coverage_turns_the_rule_off(
    snapshot: IndexSnapshot, embedder: FakeEmbedder
) -> None:
    assert not make_retriever(snapshot, embedder, min_coverage=0.0).search(OFF_TOPIC).no_good_match


@pytest.mark.parametrize(
    ("coverage", "cosine", "flagged"),
    [(0.1, 0.3, True), (0.1, 0.7, False), (0.8, 0.3, False), (0.1, None, True), (0.8, None, False)],
)
def test_both_coverage_and_cosine_must_be_weak(
    coverage: float, cosine: float | None, flagged: bool
) -> None:
    verdict = judge(
        coverage=coverage,
        missing=(),
        top_cosine=cosine,
        best_score=0.9,
        has_hits=True,
        min_coverage=0.36,
        min_cosine=0.5,
        min_score=0.0,
    )
    assert verdict.no_good_match is flagged


def covered_verdict(*, best_score: float, has_hits: bool, min_score: float) -> NoMatchVerdict:
    """The verdict for a fully covered, semantically close question: only the floor can fire."""
    return judge(
        coverage=1.0,
        missing=(),
        top_cosine=0.9,
        best_score=best_score,
        has_hits=has_hits,
        min_coverage=0.36,
        min_cosine=0.5,
        min_score=min_score,
    )


def test_score_floor_and_empty_hits_still_flag() -> None:
    def verdict(*, best_score: float, has_hits: bool, min_score: float) -> bool:
        return covered_verdict(
            best_score=best_score, has_hits=has_hits, min_score=min_score
        ).no_good_match

    assert verdict(best_score=0.2, has_hits=True, min_score=0.3)
    assert not verdict(best_score=0.4, has_hits=True, min_score=0.3)
    assert verdict(best_score=0.0, has_hits=False, min_score=0.0)


@pytest.mark.parametrize(
    ("best_score", "has_hits", "reason"),
    [
        (0.2, True, "the best match scores 0.20, under the floor 0.30"),
        (0.0, False, "nothing in the index matched"),
        (0.9, True, ""),
    ],
)
def test_reason_names_the_rule_that_fired(best_score: float, has_hits: bool, reason: str) -> None:
    verdict = covered_verdict(best_score=best_score, has_hits=has_hits, min_score=0.3)
    assert verdict.reason(question="Any question?", min_score=0.3) == reason


def test_question_words_are_shown_as_typed_in_the_order_asked_for() -> None:
    question = "Is there a crèche for staff children at Moody\u2019s offices?"
    stems = content_terms(question)
    words = question_words(question, stems)
    assert set(words) >= {"crèche", "Moody\u2019s", "offices"}
    assert question_words(question, stems[::-1]) == words[::-1]


def test_content_terms_drop_question_words_and_stem() -> None:
    assert content_terms("How many days of annual leave do I get?") == ["day", "annual", "leav"]


def test_rare_missing_term_weighs_more_than_common_covered_term() -> None:
    coverage, missing = term_coverage(
        ["sacco", "dog"],
        ["The Sacco opens at nine."],
        document_frequency={"sacco": 90},
        documents=100,
    )
    assert missing == ("dog",)
    assert coverage < 0.1


words = st.lists(st.sampled_from(["loan", "fee", "dog", "leav", "rate", "card"]), max_size=5)


@given(terms=words, texts=st.lists(st.text(max_size=40), max_size=4), extra=st.text(max_size=40))
def test_coverage_is_a_share_and_more_hits_never_lower_it(
    terms: list[str], texts: list[str], extra: str
) -> None:
    terms = list(dict.fromkeys(terms))
    frequency = {"loan": 5, "fee": 2, "rate": 9}
    before, _ = term_coverage(terms, texts, document_frequency=frequency, documents=10)
    after, _ = term_coverage(terms, [*texts, extra], document_frequency=frequency, documents=10)
    assert 0.0 <= before <= after <= 1.0


def test_thresholds_come_from_the_environment_and_are_validated() -> None:
    settings = Settings.from_env({"ASSISTANT_MIN_COVERAGE": "0.2", "ASSISTANT_MIN_COSINE": "0.45"})
    assert (settings.retrieval.min_coverage, settings.retrieval.min_cosine) == (0.2, 0.45)
    with pytest.raises(ConfigError, match=r"min_cosine must be in \[0, 1\], got 1.5"):
        RetrievalSettings(min_cosine=1.5)


# Words a refusal named on real handbooks although they are no topic (issue 41).
NOT_TOPICS = ("I'll", "next", "okay", "stuff", "thinking", "somewhere", "couple", "I\u2019m")


def test_a_refusal_names_only_the_topic_of_an_everyday_question(
    snapshot: IndexSnapshot, embedder: FakeEmbedder
) -> None:
    question = "My cat died last night and I'm really not okay. I'll be thinking of stuff, next?"
    result = make_retriever(snapshot, embedder).search(question)
    assert result.no_good_match
    assert result.no_match_reason.startswith("none of the closest sections mentions “cat”")
    for word in NOT_TOPICS:
        assert f"“{word}”" not in result.no_match_reason


def test_a_refusal_without_a_nameable_word_names_none(
    snapshot: IndexSnapshot, embedder: FakeEmbedder
) -> None:
    result = make_retriever(snapshot, embedder).search("okay so I'll somewhere stuff next couple?")
    assert result.no_good_match
    assert "“" not in result.no_match_reason


def test_topic_words_keep_nouns_and_names_and_drop_the_rest() -> None:
    kept = topic_words(["sabbatical", "crypto", "401(k)", "W-2", "tuition", "inbox", *NOT_TOPICS])
    assert kept == ("sabbatical", "crypto", "401(k)", "W-2", "tuition", "inbox")


@given(st.lists(st.sampled_from((*NOT_TOPICS, "day", "thinks", "wondering", "really", "we're"))))
def test_no_filler_or_contraction_is_ever_a_topic(words: list[str]) -> None:
    assert topic_words(words) == ()
