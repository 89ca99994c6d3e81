"""One decision, offline: do the retrieved passages answer the question?

The offline answerer quotes passages; when the policies are silent it must say
so instead of quoting an unrelated one. This module reads a handful of signals
a reviewer can check on the ranked answer units (`assistant.answering.ranking`)
and combines them with weights fitted by logistic regression on the dev sets
(``answerability.json`` beside this module, written by
``bench/answerability_fit.py``, which also reports the cross-validated ROC; see
docs/answer-eval.md). No floor here is set by hand: the operating point is the
fitted probability threshold.

Signals (`Signals`), each in [0, 1] or a count:

- ``cosine``: the best cosine of the three best units to the question (MiniLM,
  each unit embedded under its nearest headings);
- ``late``: the best token-level late interaction of the three best units
  (each topic word piece of the question meets its best match among the
  unit's pieces, heading included; averaged), from the same model run;
- ``focus``: the share of the question's topic words (content words minus
  asking words, crudely stemmed, up to a shared stem) that the three best
  units or their heading paths contain, each word weighted by how few of the
  candidate units contain it (a word no document uses weighs most, and is
  missing);
- ``best_words``: the rarity-weighted share of topic words in the best unit's
  text plus its heading path;
- ``together``: the share of the question's key phrases (two adjacent topic
  words, "phone bill", "stock options") that one of the three best units
  writes as a phrase, in a sentence or heading ("options on stock" counts;
  "a phone" here and "the bill" there do not);
- ``value_missing``: the question asks for a kind of value (a percentage, an
  amount, a duration, a count, ...) and none of the five best units about its
  topic states one; ``year_missing``: it names a year no candidate mentions;
- ``topic_missing``: a "do we have a policy on X" question, or a "do staff
  get X" / "does the Sacco offer X" one whose X is a phrase, whose X (all its
  words together) neither the headings of the closest sections nor one of the
  three best units names, and no heading names its rarest word: such a
  question asks whether the section or the benefit exists,
  so this one is decisive, as is a follow-up's added constraint ("what about
  for interns?") that no candidate unit names;
- ``unknown``: the share of the topic words that no indexed document uses in
  any form (retrieval's unknown words after inflections);
- ``margin``: the best unit's score minus the next one's;
- ``doubted``: retrieval itself judged its hits no good match;
- ``reader``: the reader's best probability that one of the first retrieved
  passages answers the question (``assistant.embeddings.reader``; 0 without it);
- ``reader_unit``: the same for the three best answer units under their headings.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from assistant.answering.asking import asked_value, missing_years
from assistant.answering.ranking import Ranked, key_phrases, matched
from assistant.answering.units import AnswerUnit
from assistant.errors import ConfigError
from assistant.words import WORD, content_words, quoted_list, topic_words

__all__ = [
    "CALIBRATION_FILE",
    "DIRECTIONS",
    "READER_SIGNALS",
    "SIGNAL_NAMES",
    "WORDS_ONLY",
    "Calibration",
    "Decision",
    "Model",
    "Signals",
    "decide",
    "load_calibration",
    "measure",
    "topic_asked",
]

logger = logging.getLogger(__name__)

CALIBRATION_FILE = Path(__file__).with_name("answerability.json")
_JOINT_UNITS = 3
_VALUE_UNITS = 5
_VALUE_TOPIC = 0.1
# "Do we have a policy on car insurance?", "Is there a rule about pets?"
_TOPIC_QUESTION = re.compile(
    r"\b(?:(?:do|does)\s+(?:we|you|the\s+\w+|it)\s+have|is\s+there|are\s+there)\s+"
    r"(?:an?\s+|any\s+)?(?:\w+\s+)?(?:polic(?:y|ies)|rules?|guidelines?|guidance|benefits?|"
    r"programmes?|programs?|schemes?)\s+(?:on|about|for|regarding|covering|around)\s+(.+)$",
    re.I,
)

# "Do staff get stock options?", "Will the Sacco pay my phone bill?": whether the
# organisation offers a thing. A question about what I, we or you do ("Can I get
# paid back ...", "Will I pay extra ...") asks something else.
_OFFER_QUESTION = re.compile(
    r"^(?:do|does|will|would|can|could)\s+(?!(?:i|we|you)\s)(?:the\s+|our\s+)?(?:\w+\s+)??\w+\s+"
    r"(?:(?:ever|also)\s+)?(?:get|offer|provide|pay|cover|give|reimburse|fund|subsidi[sz]e|"
    r"issue|match)\s+(?:for\s+)?(?:(?:my|our|their|an?|any|the)\s+)?(.+)$",
    re.I,
)
# An offered thing of one word ("a discount") is left to the fitted signals; a
# phrase ("phone bill") must be found as such.
_OFFER_WORDS = 2

# Where the topic of "a policy on car insurance for staff" ends.
_QUALIFIER = re.compile(
    r"\s+(?:for|of|in|at|to|when|if|during|while|with|by|from|that|which)\s+", re.I
)


@dataclass(frozen=True, slots=True)
class Signals:
    """What the decision reads; see the module docstring for each field."""

    cosine: float
    late: float
    focus: float
    best_words: float
    value_missing: float
    year_missing: float
    topic_missing: float
    unknown: float
    margin: float
    doubted: float
    together: float = 1.0
    reader: float = 0.0
    reader_unit: float = 0.0

    def vector(self, names: Sequence[str]) -> list[float]:
        """Return the named signals in order."""
        return [float(getattr(self, name)) for name in names]


SIGNAL_NAMES = tuple(f.name for f in fields(Signals))
# The direction each signal may push the decision (+1: towards "answers"); the
# fit keeps every weight on its side of zero, so no signal ever counts backwards.
DIRECTIONS = {
    "cosine": 1,
    "late": 1,
    "focus": 1,
    "best_words": 1,
    "value_missing": -1,
    "year_missing": -1,
    "topic_missing": -1,
    "unknown": -1,
    "margin": 1,
    "doubted": -1,
    "together": 1,
    "reader": 1,
    "reader_unit": 1,
}
READER_SIGNALS = frozenset({"reader", "reader_unit"})
WORDS_ONLY = tuple(n for n in SIGNAL_NAMES if n not in {"cosine", "late"} | READER_SIGNALS)


@dataclass(frozen=True, slots=True)
class Model:
    """A fitted logistic regression over standardised signals."""

    names: tuple[str, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float
    # From here to ``threshold`` the decision is unsure: the closest passage is
    # quoted with a hedge. Equal to ``threshold`` when no band was fitted.
    hedge: float = 1.0

    def __post_init__(self) -> None:
        if self.hedge > self.threshold:
            object.__setattr__(self, "hedge", self.threshold)

    def probability(self, signals: Signals) -> float:
        """Return the fitted probability that the passages answer the question."""
        z = self.bias
        values = signals.vector(self.names)
        for value, mean, scale, weight in zip(
            values, self.means, self.scales, self.weights, strict=True
        ):
            z += weight * (value - mean) / scale
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


@dataclass(frozen=True, slots=True)
class Calibration:
    """The fitted models: with word-piece signals, with the pooled cosine only, words only.

    ``with_tokens`` serves the packaged embedder, which returns the word-piece
    vectors of the same model run; ``with_meaning`` an embedder that returns
    pooled vectors only (a remote one); ``words_only`` no embedder at all;
    ``with_reader`` the packaged embedder with the reader.
    """

    with_meaning: Model
    words_only: Model
    with_tokens: Model | None = None
    with_reader: Model | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """The verdict, its fitted probability, the signals behind it, and a reason a user reads.

    ``hedged``: not covered, but close: the probability lies in the fitted band
    under the threshold, and no decisive check (a missing year, topic or added
    constraint) refused it, so the closest passage may be quoted with a hedge.
    """

    covered: bool
    probability: float
    signals: Signals
    reason: str = ""
    hedged: bool = False


def measure(
    question: str,
    ranked: Sequence[Ranked],
    focus: set[str],
    unknown: Sequence[str],
    *,
    doubted: bool,
    passages_read: Sequence[float] = (),
) -> Signals:
    """Return the signals of ``ranked`` (best first) for ``question``.

    ``passages_read``: the reader's probabilities of the first retrieved passages.
    """
    top = ranked[:_JOINT_UNITS]
    found = set().union(*(r.found for r in top)) if top else set()
    unknown_words = content_words(" ".join(unknown))
    total = len(focus) + len(unknown_words)
    kind = asked_value(question)
    value_missing = bool(
        kind is not None
        and kind.decisive
        and not any(r.figure and r.words + r.place >= _VALUE_TOPIC for r in ranked[:_VALUE_UNITS])
    )
    scores = [r.score for r in ranked[:2]]
    return Signals(
        cosine=max((r.cosine for r in top), default=0.0),
        late=max((r.late for r in top), default=0.0),
        focus=_weighted_share(found & focus, focus | unknown_words, ranked),
        best_words=min(1.0, ranked[0].words + ranked[0].place) if ranked else 0.0,
        value_missing=float(value_missing),
        year_missing=float(bool(missing_years(question, (r.text for r in ranked)))),
        topic_missing=float(_topic_missing(question, ranked)),
        unknown=len(unknown_words) / total if total else 0.0,
        margin=scores[0] - scores[1] if len(scores) == 2 else (scores[0] if scores else 0.0),
        doubted=float(doubted),
        together=_together_share(question, top, focus),
        reader=max(passages_read, default=0.0),
        reader_unit=max((r.reader for r in top), default=0.0),
    )


def decide(
    question: str,
    ranked: Sequence[Ranked],
    focus: set[str],
    unknown: Sequence[str],
    *,
    doubted: bool,
    with_meaning: bool,
    with_tokens: bool = False,
    added: Sequence[str] = (),
    calibration: Calibration | None = None,
    passages_read: Sequence[float] | None = None,
) -> Decision:
    """Decide whether ``ranked`` answers ``question``, with the fitted model.

    ``with_tokens``: the ranking measured the word-piece signal (``late``).
    ``added`` are the words a follow-up adds to the earlier topic ("interns");
    when no candidate unit names one of them, the passages answer the earlier
    question, not this one. ``passages_read``: the reader's probabilities of the
    first retrieved passages (None without a reader); the reader's model decides then.
    """
    signals = measure(
        question, ranked, focus, unknown, doubted=doubted, passages_read=passages_read or ()
    )
    if not ranked:
        return Decision(False, 0.0, signals, "the closest sections have no passage to quote")
    calibration = calibration or load_calibration()
    model = calibration.with_meaning if with_meaning else calibration.words_only
    if with_meaning and with_tokens and calibration.with_tokens is not None:
        model = calibration.with_tokens
    reading = calibration.with_reader if passages_read is not None else None
    if reading is not None and (with_meaning or not {"cosine", "late"} & set(reading.names)):
        model = reading
    read = model is reading
    probability = model.probability(signals)
    # Without the meaning signal, a unit sharing no topic word has no evidence at all.
    evidence = with_meaning or read or signals.focus > 0
    covered = evidence and probability >= model.threshold
    close = evidence and not covered and probability >= model.hedge
    reason = "" if covered else _reason(question, signals, ranked, unknown)
    decisive = _decisive(question, signals, ranked, unknown, added) if covered or close else ""
    if decisive:
        covered, close, reason = False, False, decisive
    logger.debug(
        "answerability %.3f (hedge %.3f, threshold %.3f): %s",
        probability,
        model.hedge,
        model.threshold,
        signals,
    )
    return Decision(covered, probability, signals, reason, hedged=close)


def _decisive(
    question: str,
    signals: Signals,
    ranked: Sequence[Ranked],
    unknown: Sequence[str],
    added: Sequence[str],
) -> str:
    """Return why the passages cannot answer whatever the fitted probability, or ""."""
    absent = _absent(added, ranked)
    if absent:
        return f"no passage of the closest sections mentions {quoted_list(absent)} for this"
    asked_years = missing_years(_asking_clause(question), (r.text for r in ranked))
    if asked_years:
        # "What dividend did the Sacco pay in 2019?" is not answered by 2024's;
        # a year in a clause that only sets the scene ("I joined in 2023, how
        # long ...") is left to the fitted signal.
        return f"none of the closest sections mentions {quoted_list(list(asked_years))}"
    if signals.topic_missing:
        # The question asks whether such a section exists, and none does.
        return _reason(question, signals, ranked, unknown)
    return ""


def topic_asked(question: str) -> str:
    """Return X of "do we have a policy on X for staff" or "do staff get X", or "".

    "Do we have a policy on car insurance for staff?" and "Does the Sacco offer
    car insurance?" both ask about "car insurance".
    """
    text = question.strip(" ?.!")
    match = _TOPIC_QUESTION.search(text)
    if match:
        return _QUALIFIER.split(match.group(1), maxsplit=1)[0].strip()
    match = _OFFER_QUESTION.search(text)
    if not match:
        return ""
    topic = _QUALIFIER.split(match.group(1), maxsplit=1)[0].strip()
    return topic if len(content_words(topic)) >= _OFFER_WORDS else ""


def _weighted_share(found: set[str], wanted: set[str], ranked: Sequence[Ranked]) -> float:
    """Return the share of ``wanted`` in ``found``, each word weighted by its rarity.

    A word few candidate units contain weighs most ("sabbatical" in "how many
    days of sabbatical"), a word every unit repeats ("days") little; a word no
    unit contains (one no document uses) weighs most of all.
    """
    if not wanted:
        return 1.0
    total = len(ranked)
    weights = {w: math.log(1 + total / (1 + sum(w in r.found for r in ranked))) for w in wanted}
    return sum(weights[w] for w in found) / sum(weights.values())


def _together_share(question: str, ranked: Sequence[Ranked], focus: set[str]) -> float:
    """Return the share of the question's key phrases one of ``ranked`` writes as a phrase.

    Both words of "phone bill" in one unit, apart ("a phone", "the bill"), are
    not a phone bill; the phrase is there when its words stand next to each
    other in a sentence or heading, or the other way round across a short word
    or two ("options on stock", "the bill for the phone").
    """
    phrases = key_phrases(question, focus)
    if not phrases:
        return 1.0
    runs = [run for r in ranked for run in _unit_runs(r.candidate.unit)]
    return sum(any(_written_together(a, b, run) for run in runs) for a, b in phrases) / len(phrases)


def _written_together(first: str, second: str, run: Sequence[str]) -> bool:
    # ``run``: a sentence's words as stems, "" for a short word that links two others.
    for i, word in enumerate(run):
        if not word:
            continue
        if matched({first}, {word}) and i + 1 < len(run) and matched({second}, {run[i + 1]}):
            return True
        if matched({second}, {word}):
            after = run[i + 1 : i + 4]
            gap = 0
            while gap < len(after) and not after[gap]:
                gap += 1
            if 0 < gap <= 2 and gap < len(after) and matched({first}, {after[gap]}):
                return True
    return False


@functools.lru_cache(maxsize=4096)
def _unit_runs(unit: AnswerUnit) -> tuple[tuple[str, ...], ...]:
    """Return the unit's text, lead-in and headings as runs of stems ("" for a stopword)."""
    runs = []
    for part in (unit.text, unit.context, *unit.headings):
        for piece in re.split(r"[.;:!?,()\n|]+", part):
            runs.append(tuple(next(iter(content_words(w)), "") for w in WORD.findall(piece)))
    return tuple(runs)


def _words_with_headings(ranked: Ranked) -> set[str]:
    return set(_unit_words(ranked.candidate.unit))


@functools.lru_cache(maxsize=4096)
def _unit_words(unit: AnswerUnit) -> frozenset[str]:
    # Each signal reads the same units' words: a question's units are read once.
    return frozenset(content_words(" ".join((unit.text, unit.context, *unit.headings))))


def _asking_clause(question: str) -> str:
    """Return the clause that asks: the question's last sentence after its last ";" or ","."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", question.strip()) if s.strip()]
    last = sentences[-1] if sentences else question
    return re.split(r"[;,]\s+", last)[-1]


def _absent(added: Sequence[str], ranked: Sequence[Ranked]) -> list[str]:
    """Return the words of ``added`` that no candidate unit (with its headings) names."""
    if not added:
        return []
    words = set().union(*(_words_with_headings(r) for r in ranked))
    return [w for w in added if content_words(w) and not matched(content_words(w), words)]


def _topic_missing(question: str, ranked: Sequence[Ranked]) -> bool:
    """Whether "do we have a policy on X" finds X neither as a heading nor in one of the best units.

    Every word of X must be there together ("car insurance": a section on
    cars and a sentence on insured loans do not make one on car insurance).
    """
    topic = content_words(topic_asked(question))
    if not topic:
        return False
    headings = [content_words(h) for r in ranked for h in r.candidate.unit.headings]
    if matched(topic, set().union(*headings)) == topic:
        return False
    # A section titled by the topic's rarest word ("Does Sourcegraph match my
    # 401k?" for "401k contributions") is about it; one about its commonest
    # ("Payment Options" for "stock options") is not.
    count = {w: sum(bool(matched({w}, _words_with_headings(r))) for r in ranked) for w in topic}
    rarest = min(topic, key=lambda w: (count[w], w))
    if any(matched({rarest}, words) for words in headings):
        return False
    return not any(matched(topic, _words_with_headings(r)) == topic for r in ranked[:_JOINT_UNITS])


def _reason(
    question: str, signals: Signals, ranked: Sequence[Ranked], unknown: Sequence[str]
) -> str:
    """Say in words a user reads why the passages do not answer."""
    years = missing_years(question, (r.text for r in ranked))
    if years:
        return f"none of the closest sections mentions {quoted_list(list(years))}"
    kind = asked_value(question)
    if signals.value_missing and kind is not None:
        return f"none of the closest sections states {kind.name} for this"
    named = topic_words(unknown)
    if named:
        return f"no passage of the closest sections is about {quoted_list(list(named)[:3])}"
    topic = topic_asked(question)
    if signals.topic_missing and topic:
        return f"no section of the policies is about {quoted_list([topic])}"
    return "no passage of the closest sections addresses the question"


@functools.cache
def load_calibration(path: Path = CALIBRATION_FILE) -> Calibration:
    """Return the fitted models from ``path``.

    Raises:
        ConfigError: The file is missing or malformed (a broken install).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        tokens, reader = data.get("with_tokens"), data.get("with_reader")
        return Calibration(
            _model(data["with_meaning"]),
            _model(data["words_only"]),
            _model(tokens) if tokens is not None else None,
            _model(reader) if reader is not None else None,
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"cannot read the answerability weights {path}: {exc}") from exc


def _model(data: dict[str, object]) -> Model:
    def floats(key: str) -> tuple[float, ...]:
        values = data[key]
        if not isinstance(values, list):
            raise TypeError(f"{key} is not a list")
        return tuple(float(v) for v in values)

    names = data["names"]
    if not isinstance(names, list) or not set(names) <= set(SIGNAL_NAMES):
        raise ValueError(f"unknown signal names {names}")
    bias, threshold = data["bias"], data["threshold"]
    if not isinstance(bias, int | float) or not isinstance(threshold, int | float):
        raise TypeError("bias and threshold must be numbers")
    hedge = data.get("hedge", threshold)
    if not isinstance(hedge, int | float):
        raise TypeError("hedge must be a number")
    return Model(
        tuple(str(n) for n in names),
        floats("means"),
        floats("scales"),
        floats("weights"),
        float(bias),
        float(threshold),
        float(hedge),
    )
