"""Refit the offline answerability decision and report its cross-validated ROC.

Usage (indexes built with the default settings from each set's corpus)::

    PYTHONPATH=. python bench/answerability_fit.py \\
        --set sample=data/eval/questions.jsonl,data/eval/calibration.jsonl@/tmp/idx-sample \\
        --set github=data/eval/github-site-policy.jsonl@/tmp/idx-github \\
        --set handbook=data/eval/sourcegraph-handbook.jsonl@/tmp/idx-handbook \\
        [--write] [--cache /tmp/answerability-cache]

For every question it runs the real search and the offline ranking (exactly as
the service's offline path does for a first question), measures the signals of
`assistant.answering.answerability`, and labels the question answerable (it has
gold entries) or not. Then:

- cross-validation two ways: five folds that each hold out a fifth of every
  set (no question is scored by a fit that saw it), and one fold per set (each
  set scored by a fit on the *other* sets only: the figure for a handbook the
  fit never saw);
- the weights are kept on the side of zero each signal's meaning allows
  (`DIRECTIONS`: more relevance never lowers the probability);
- each signal's AUC per set, then the ROC of those out-of-fold scores per set
  and pooled, and the operating point: the highest threshold at which the
  out-of-fold scores refuse at most ``--max-refused`` of each set's answerable
  questions;
- with ``--write``, the final weights (fitted on all sets) and that threshold
  go to ``assistant/answering/answerability.json``, for the model over
  ``--signals`` (default `SHIPPED`) without token-level signals, for the
  words-only one (no embedder), and, when ``--signals`` names a token-level
  one, for a ``with_tokens`` model;
- ``--timing N`` instead times a live search and the signals on the first N
  questions of each set (docs/benchmarks.md).

Searches and embeddings are cached under ``--cache`` so a refit is quick.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
from cached_embedder import CachedEmbedder, CachedReader

from assistant.answering.answerability import (
    CALIBRATION_FILE,
    DIRECTIONS,
    SIGNAL_NAMES,
    WORDS_ONLY,
    Signals,
    measure,
)
from assistant.answering.extractive import _candidates, relevant_unknown_words
from assistant.answering.prompt import build_prompt
from assistant.answering.ranking import focus_words, rank_units
from assistant.config import Settings
from assistant.embeddings.factory import make_embedder
from assistant.embeddings.late_reader import load_reader
from assistant.protocols import Embedder, Reader
from assistant.retrieval.evaluation import load_questions
from assistant.retrieval.factory import open_retriever
from assistant.tokens import get_tokenizer
from assistant.types import EvalQuestion, SearchResult

Array = npt.NDArray[np.float64]
# The shipped model (docs/answer-eval.md, "Third pass"): the cosine, the asked
# value, unknown words, the margin and the key phrases written together; the
# other signals are measured and reported, and none of them raised a held-out
# figure with these.
SHIPPED = ("cosine", "value_missing", "unknown", "margin", "together")
TOKEN_SIGNALS = {"late"}
_L2 = 4.0
_FOLDS = 5


@dataclass(frozen=True, slots=True)
class Row:
    """One question's signals and label."""

    group: str
    qid: str
    answerable: bool
    signals: Signals


def signals_for(
    question: EvalQuestion,
    result: SearchResult,
    settings: Settings,
    embedder: Embedder,
    reader: Reader | None = None,
) -> Signals:
    """Measure the signals the service's offline path would decide on."""
    prompt = build_prompt(
        question.question,
        result.hits,
        (),
        budget=settings.retrieval.context_tokens,
        tokenizer=get_tokenizer(settings.chunking.encoding),
    )
    unknown = relevant_unknown_words(result.unknown_words, prompt.sources)
    ranked = rank_units(
        question.question,
        _candidates(prompt.sources),
        embedder=embedder,
        unknown_words=unknown,
        token_level=True,
        reader=reader,
    )
    read: list[float] = []
    if reader is not None and prompt.sources:
        read = reader.score(question.question, [h.chunk.text for h in prompt.sources[:5]])
    return measure(
        question.question,
        ranked,
        focus_words(question.question, unknown),
        unknown,
        doubted=result.no_good_match,
        passages_read=read,
    )


def rows_for(
    name: str, files: Sequence[Path], index: Path, cache: Path, *, read: bool = False
) -> list[Row]:
    """Return the rows of one set, searching (or reading the cached search) once each.

    With ``read``, the shipped reader also reads each question's passages and units.
    """
    settings = Settings.from_env({})
    settings = replace(settings, store=replace(settings.store, path=index))
    cache.mkdir(parents=True, exist_ok=True)
    embedder = CachedEmbedder(make_embedder(settings.embedding), cache / f"{name}-vectors.pkl")
    retriever = open_retriever(settings, embedder=embedder)
    reader = CachedReader(load_reader(embedder), cache / f"{name}-reader.pkl") if read else None
    rows = []
    for path in files:
        for question in load_questions(path):
            key = hashlib.sha1(f"{index}\n{question.question}".encode()).hexdigest()[:16]
            stored = cache / f"{name}-{key}.pkl"
            if stored.exists():
                result = pickle.loads(stored.read_bytes())
            else:
                result = retriever.search(question.question)
                stored.write_bytes(pickle.dumps(result))
            signals = signals_for(question, result, settings, embedder, reader)
            rows.append(Row(name, question.id, bool(question.gold), signals))
    embedder.save()
    if reader is not None:
        reader.save()
    return rows


def timing(name: str, files: Sequence[Path], index: Path, cache: Path, limit: int) -> None:
    """Print the p50/p95 of a live search and of measuring the signals, and their ratio.

    The signals are measured on the ranking the offline answer makes anyway,
    so measuring them is the decision's whole added cost per question.
    """
    settings = Settings.from_env({})
    settings = replace(settings, store=replace(settings.store, path=index))
    embedder = CachedEmbedder(make_embedder(settings.embedding), cache / f"{name}-vectors.pkl")
    retriever = open_retriever(settings, embedder=embedder.inner)
    retriever.search("warm up")
    searches: list[float] = []
    decisions: list[float] = []
    for question in [q for path in files for q in load_questions(path)][:limit]:
        started = time.perf_counter()
        result = retriever.search(question.question)
        searches.append(time.perf_counter() - started)
        prompt = build_prompt(
            question.question,
            result.hits,
            (),
            budget=settings.retrieval.context_tokens,
            tokenizer=get_tokenizer(settings.chunking.encoding),
        )
        unknown = relevant_unknown_words(result.unknown_words, prompt.sources)
        ranked = rank_units(question.question, _candidates(prompt.sources), embedder=embedder)
        focus = focus_words(question.question, unknown)
        started = time.perf_counter()
        measure(question.question, ranked, focus, unknown, doubted=result.no_good_match)
        decisions.append(time.perf_counter() - started)
    s50, s95 = np.percentile(np.asarray(searches) * 1000, [50, 95])
    d50, d95 = np.percentile(np.asarray(decisions) * 1000, [50, 95])
    print(
        f"{name}: search p50 {s50:.1f} ms p95 {s95:.1f} ms; all signals p50 {d50:.2f} ms "
        f"p95 {d95:.2f} ms (p95 ratio {d95 / s95:.4f})"
    )


def fit(
    x: Array, y: Array, signs: Array, *, steps: int = 3000, rate: float = 0.2
) -> tuple[Array, float]:
    """Fit an L2-regularised logistic regression by projected gradient descent.

    ``x`` is standardised; each weight stays on the side of zero its sign in
    ``signs`` allows (`DIRECTIONS`), so a signal never counts backwards.
    """
    w, b = np.zeros(x.shape[1]), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(x @ w + b)))
        w -= rate * (x.T @ (p - y) / len(y) + _L2 * w / len(y))
        w = np.where(w * signs < 0, 0.0, w)
        b -= rate * float((p - y).mean())
    return w, b


def standardise(x: Array) -> tuple[Array, Array]:
    mean = x.mean(0)
    scale = x.std(0)
    scale[scale < 1e-9] = 1.0
    return mean, scale


def probabilities(x: Array, mean: Array, scale: Array, w: Array, b: float) -> Array:
    return np.asarray(1 / (1 + np.exp(-(((x - mean) / scale) @ w + b))))


def out_of_fold(x: Array, y: Array, folds: Array, signs: Array) -> Array:
    """Score each fold's rows with a fit on the other folds' rows."""
    out = np.zeros(len(y))
    for fold in np.unique(folds):
        held = folds == fold
        mean, scale = standardise(x[~held])
        w, b = fit((x[~held] - mean) / scale, y[~held], signs)
        out[held] = probabilities(x[held], mean, scale, w, b)
    return out


def set_folds(groups: Sequence[str]) -> Array:
    """One fold per set: each set scored by a fit on the other sets only."""
    order = list(dict.fromkeys(groups))
    return np.asarray([order.index(g) for g in groups])


def mixed_folds(groups: Sequence[str], y: Array) -> Array:
    """Five folds, each holding a fifth of every set's answerable and unanswerable rows."""
    folds = np.zeros(len(y), dtype=int)
    for group in dict.fromkeys(groups):
        for label in (0, 1):
            pick = np.flatnonzero((np.asarray(groups) == group) & (y == label))
            folds[pick] = np.arange(len(pick)) % _FOLDS
    return folds


def auc(scores: Array, y: Array) -> float:
    pos, neg = scores[y == 1], scores[y == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).mean()
    ties = (pos[:, None] == neg[None, :]).mean()
    return float(greater + ties / 2)


def operating_point(
    scores: Array, y: Array, max_refused: float, groups: Sequence[str] = ()
) -> float:
    """Return the highest threshold refusing at most ``max_refused`` of each set's answerable rows.

    The target holds per corpus, so the threshold must keep it on every set
    (pooled when ``groups`` is empty).
    """
    labels = np.asarray(groups) if len(groups) else np.zeros(len(y), dtype=int)
    best = 0.0
    for threshold in np.unique(scores):
        if all(
            (scores[(y == 1) & (labels == g)] < threshold).mean() <= max_refused
            for g in np.unique(labels)
        ):
            best = max(best, float(threshold))
    return best


def rates(scores: Array, y: Array, threshold: float) -> tuple[float, float]:
    """Return (unanswerable flagged, answerable refused) at ``threshold``."""
    refused = scores < threshold
    return float(refused[y == 0].mean()), float(refused[y == 1].mean())


def report(
    rows: Sequence[Row], names: Sequence[str], max_refused: float, max_hedged: float = 0.0
) -> dict[str, object]:
    """Print the grouped-CV ROC table; return the final model fitted on every row.

    The hedge band: under ``hedge`` the answer is refused (at most ``max_refused``
    of each set's answerable questions), from there to ``threshold`` the closest
    passage is quoted with a hedge (at most ``max_hedged`` more).
    """
    x = np.asarray([r.signals.vector(names) for r in rows], dtype=np.float64)
    y = np.asarray([r.answerable for r in rows], dtype=np.float64)
    groups = [r.group for r in rows]
    signs = np.asarray([DIRECTIONS[n] for n in names], dtype=np.float64)
    scores = out_of_fold(x, y, mixed_folds(groups, y), signs)
    unseen = out_of_fold(x, y, set_folds(groups), signs)
    hedge = operating_point(scores, y, max_refused, groups)
    threshold = operating_point(scores, y, max_refused + max_hedged, groups)
    print(f"model over {', '.join(names)}; hedge p >= {hedge:.3f}, answer p >= {threshold:.3f}")
    print(
        "| set | answerable | unanswerable | 5-fold AUC | flagged | refused "
        "| set held out: AUC | flagged | refused |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for group in [*dict.fromkeys(groups), "pooled"]:
        pick = np.ones(len(y), bool) if group == "pooled" else np.asarray(groups) == group
        flagged, refused = rates(scores[pick], y[pick], threshold)
        held_flagged, held_refused = rates(unseen[pick], y[pick], threshold)
        print(
            f"| {group} | {int(y[pick].sum())} | {int((1 - y[pick]).sum())} | "
            f"{auc(scores[pick], y[pick]):.3f} | {flagged:.3f} | {refused:.3f} | "
            f"{auc(unseen[pick], y[pick]):.3f} | {held_flagged:.3f} | {held_refused:.3f} |"
        )
    print("ROC (pooled, out of fold): threshold, unanswerable flagged, answerable refused")
    for t in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
        flagged, refused = rates(scores, y, t)
        print(f"  {t:.2f}  {flagged:.3f}  {refused:.3f}")
    mean, scale = standardise(x)
    w, b = fit((x - mean) / scale, y, signs)
    for name, weight in sorted(zip(names, w, strict=True), key=lambda p: -abs(p[1])):
        print(f"  weight {name:<14} {weight:+.3f}")
    return {
        "names": list(names),
        "means": [round(float(v), 6) for v in mean],
        "scales": [round(float(v), 6) for v in scale],
        "weights": [round(float(v), 6) for v in w],
        "bias": round(b, 6),
        "threshold": round(threshold, 6),
        "hedge": round(hedge, 6),
    }


def single_signal_auc(rows: Sequence[Row]) -> None:
    """Print each signal's AUC per set (answerable above unanswerable; < 0.5 points to refusal)."""
    groups = list(dict.fromkeys(r.group for r in rows))
    print("| signal | " + " | ".join(groups) + " |")
    print("|---|" + "---|" * len(groups))
    for name in SIGNAL_NAMES:
        cells = []
        for group in groups:
            pick = [r for r in rows if r.group == group]
            x = np.asarray([getattr(r.signals, name) for r in pick], dtype=np.float64)
            y = np.asarray([r.answerable for r in pick], dtype=np.float64)
            cells.append(f"{auc(x, y):.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


def parse_set(text: str) -> tuple[str, list[Path], Path]:
    name, rest = text.split("=", 1)
    files, index = rest.rsplit("@", 1)
    return name, [Path(f) for f in files.split(",")], Path(index)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--set", action="append", required=True, type=parse_set)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/answerability-cache"))
    parser.add_argument("--max-refused", type=float, default=0.04)
    parser.add_argument(
        "--max-hedged", type=float, default=0.0, help="share of answerable questions hedged"
    )
    parser.add_argument("--write", action="store_true")
    parser.add_argument(
        "--timing", type=int, default=0, help="time the first N questions of each set, then exit"
    )
    parser.add_argument(
        "--signals", default=",".join(SHIPPED), help="comma-separated signals of the shipped model"
    )
    parser.add_argument(
        "--reader",
        default="",
        help="comma-separated signals of a with_reader model (read by the shipped reader)",
    )
    args = parser.parse_args(argv)
    if args.timing:
        for name, files, index in args.set:
            timing(name, files, index, args.cache, args.timing)
        return
    reading = tuple(n for n in args.reader.split(",") if n)
    rows = [
        row
        for name, files, index in args.set
        for row in rows_for(name, files, index, args.cache, read=bool(reading))
    ]
    single_signal_auc(rows)
    shipped = tuple(args.signals.split(","))
    report(rows, SIGNAL_NAMES, args.max_refused)
    limits = (args.max_refused, args.max_hedged)
    fitted = {
        "with_meaning": report(rows, tuple(n for n in shipped if n not in TOKEN_SIGNALS), *limits),
        "words_only": report(rows, tuple(n for n in shipped if n in WORDS_ONLY), *limits),
    }
    if TOKEN_SIGNALS & set(shipped):
        fitted["with_tokens"] = report(rows, shipped, *limits)
    if reading:
        fitted["with_reader"] = report(rows, reading, *limits)
    if args.write:
        fitted["fitted_on"] = sorted({r.group for r in rows})  # type: ignore[assignment]
        CALIBRATION_FILE.write_text(json.dumps(fitted, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {CALIBRATION_FILE}")


if __name__ == "__main__":
    main()
