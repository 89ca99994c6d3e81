"""Deciding that a search found no good match: query-term coverage plus the top cosine.

A question is flagged ``no_good_match`` when **both** hold:

- *coverage* < ``min_coverage``: the IDF-weighted share of the question's content
  terms (the BM25 tokenizer's stemmed words, minus question and filler words such
  as "how", "many", "get") that occur in at least one of the top
  ``COVERAGE_HITS`` fused hits. A term the corpus never uses gets the highest IDF,
  so "dog" in "Can I take my dog to the branch?" weighs most and is missing;
  and
- the best dense cosine < ``min_cosine``: the embedding does not see a close
  passage either (a paraphrase in other words can still have a high cosine).

or when the fused relevance ``score`` of the best hit is below ``min_score`` (the
older floor, 0 by default). In lexical mode there is no cosine, so coverage
decides alone.

Measured on data/eval/questions.jsonl plus data/eval/calibration.jsonl (36
unanswerable, 79 answerable questions, MiniLM): 0.44 of unanswerable questions
flagged with 0.04 of answerable ones flagged wrongly at (0.36, 0.50); tuned on
odd ids only, even ids gave 0.50 / 0.03. The cosine alone does worse (0.22 /
0.03 at 0.38). Neither reaches 0.9 / 0.05: paraphrases share few words with
the text *and* have middling cosines, exactly like plausible off-corpus
questions. See docs/retrieval-eval.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from assistant.retrieval.lexical import tokenize
from assistant.words import quoted_list, topic_words

__all__ = [
    "COVERAGE_HITS",
    "NoMatchVerdict",
    "content_terms",
    "judge",
    "question_words",
    "term_coverage",
    "unknown_words",
]

COVERAGE_HITS = 5
_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")

# Question and filler words that bm25s's stopword list keeps; they carry no topic.
_FILLER = frozenset(
    tokenize(
        "what whats which who whom whose when where why how many much does did do doing done "
        "can could would should shall will may might must me my mine we us our you your "
        "i yours he him his she her they them their it its is am are was were be been being "
        "have has had get gets got getting go goes going take let put make give gave tell "
        "know want need needed way still just now also any some something someone somebody "
        "anything there here this that these those please"
    )
)


@dataclass(frozen=True, slots=True)
class NoMatchVerdict:
    """Why a search was (or was not) judged to have no good match.

    ``top_cosine`` is None when the dense retriever did not run.
    """

    no_good_match: bool
    coverage: float
    top_cosine: float | None
    best_score: float
    missing: tuple[str, ...]
    has_hits: bool = True

    def explain(self, *, min_coverage: float, min_cosine: float, min_score: float) -> str:
        """Return one trace line, e.g. ``coverage 0.24 (missing dog), top cosine 0.20 → ...``."""
        cosine = "n/a" if self.top_cosine is None else f"{self.top_cosine:.2f}"
        missing = f" (missing {', '.join(self.missing)})" if self.missing else ""
        outcome = "no good match" if self.no_good_match else "match"
        return (
            f"coverage {self.coverage:.2f}{missing}, top cosine {cosine}, best score "
            f"{self.best_score:.3f} → {outcome} (flag when coverage < {min_coverage:.2f} "
            f"and cosine < {min_cosine:.2f}, or score < {min_score:.3f})"
        )

    def reason(self, *, question: str, min_score: float, unknown: Sequence[str] = ()) -> str:
        """Say why there is no good match, in words a user reads ("" when there is one).

        Args:
            question: The question searched.
            min_score: The relevance floor in force.
            unknown: The question's words that no indexed document uses, as typed:
                only those of them that can name a topic are named (a word
                another document uses, or "okay", explains nothing).
        """
        if not self.no_good_match:
            return ""
        if not self.has_hits:
            return "nothing in the index matched"
        if self.best_score < min_score:
            return f"the best match scores {self.best_score:.2f}, under the floor {min_score:.2f}"
        words = topic_words(unknown)[:3]
        if not words:
            return "the closest sections cover too little of the question"
        meaning = "" if self.top_cosine is None else ", and none is close in meaning"
        return f"none of the closest sections mentions {quoted_list(words)}{meaning}"


def unknown_words(
    question: str, missing: Sequence[str], document_frequency: Mapping[str, int]
) -> tuple[str, ...]:
    """Return the question's content words that no indexed chunk contains, as typed.

    Args:
        question: The question searched.
        missing: Its content terms the top hits lack (`NoMatchVerdict.missing`); a
            term no chunk contains is always among them.
        document_frequency: How many chunks contain each term.
    """
    stems = [t for t in missing if document_frequency.get(t, 0) == 0]
    return question_words(question, stems)


def question_words(question: str, stems: Sequence[str]) -> tuple[str, ...]:
    """Return the word of ``question`` behind each of ``stems``, as typed, in ``stems`` order."""
    if not stems:
        return ()
    by_stem: dict[str, str] = {}
    for word in _WORD.findall(question):
        for stem in tokenize(word):
            by_stem.setdefault(stem, word)
    return tuple(dict.fromkeys(by_stem[s] for s in stems if s in by_stem))


def content_terms(question: str) -> list[str]:
    """Return the question's distinct stemmed content terms, in order."""
    return [t for t in dict.fromkeys(tokenize(question)) if t not in _FILLER]


def term_coverage(
    terms: Sequence[str],
    hit_texts: Iterable[str],
    *,
    document_frequency: Mapping[str, int],
    documents: int,
) -> tuple[float, tuple[str, ...]]:
    """Return the IDF-weighted share of ``terms`` found in ``hit_texts``, and the missing terms.

    Args:
        terms: Content terms of the question (see `content_terms`).
        hit_texts: The texts of the top hits.
        document_frequency: How many corpus chunks contain each term.
        documents: How many chunks the corpus has.

    Returns:
        ``(coverage in [0, 1], missing terms by descending IDF)``; coverage is 1.0
        when the question has no content term.
    """
    if not terms:
        return 1.0, ()
    seen: set[str] = set()
    for text in hit_texts:
        seen.update(tokenize(text))
    weights = {t: _idf(document_frequency.get(t, 0), documents) for t in terms}
    total = sum(weights.values())
    covered = sum(w for t, w in weights.items() if t in seen)
    missing = sorted((t for t in terms if t not in seen), key=lambda t: -weights[t])
    return (covered / total if total > 0 else 1.0), tuple(missing)


def judge(
    *,
    coverage: float,
    missing: tuple[str, ...],
    top_cosine: float | None,
    best_score: float,
    has_hits: bool,
    min_coverage: float,
    min_cosine: float,
    min_score: float,
) -> NoMatchVerdict:
    """Apply the rule in the module docstring and return the verdict."""
    weak_dense = top_cosine is None or top_cosine < min_cosine
    flagged = not has_hits or best_score < min_score or (coverage < min_coverage and weak_dense)
    return NoMatchVerdict(
        no_good_match=flagged,
        coverage=coverage,
        top_cosine=top_cosine,
        best_score=best_score,
        missing=missing,
        has_hits=has_hits,
    )


def _idf(df: int, n: int) -> float:
    """BM25's IDF; a term absent from the corpus gets the largest value."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))
