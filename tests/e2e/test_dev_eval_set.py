"""The dev question set over the real GitHub site-policy corpus is well formed and answerable.

Plain Python on purpose, like test_sample_eval_set.py: no project imports, so a loader bug cannot
hide a broken question (or the other way round). The corpus is kept in the
repository, in data/corpora/github-site-policy/.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from tests.e2e import test_sample_eval_set as sample
from tests.support.paths import ROOT

QUESTIONS = ROOT / "data" / "eval" / "github-site-policy.jsonl"
CORPUS = ROOT / "data" / "corpora" / "github-site-policy" / "Policies"
KINDS = {"fact", "broad", "multi", "paraphrase", "unanswerable"}
# Markdown syntax a phrase must not contain: it has to come from plain prose between markup.
MARKUP = re.compile(r"[\[\]()*_`#|]")


def load_questions() -> list[dict[str, object]]:
    return sample.load_questions(QUESTIONS)


def gold_params() -> list[object]:
    return sample.gold_params(QUESTIONS)


def corpus() -> Path:
    assert CORPUS.is_dir(), f"corpus not found at {CORPUS}"
    return CORPUS


@cache
def document_body(relative: str) -> str:
    """Return the normalised text of one corpus file, without its YAML front matter."""
    text = (corpus() / relative).read_text(encoding="utf-8")
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        assert end != -1, f"{relative}: unterminated front matter"
        text = text[end + 5 :]
    return sample.normalise(text)


def test_questions_are_well_formed() -> None:
    questions = load_questions()
    ids = [q["id"] for q in questions]
    assert len(questions) >= 60
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
    for q in questions:
        assert re.fullmatch(r"g\d{3}", str(q["id"])), q["id"]
        assert q["kind"] in KINDS, q
        assert isinstance(q["question"], str), q
        assert len(q["question"].split()) >= 3, q
        gold = q["gold"]
        assert isinstance(gold, list), q
        if q["kind"] == "unanswerable":
            assert set(q) == {"id", "question", "kind", "gold"}, q
            assert gold == [], q
        else:
            assert set(q) - {"follow_up"} == {"id", "question", "kind", "gold", "answer"}, q
            sample.assert_follow_up(q, {other["question"] for other in questions})
            assert gold, q
            answer = q["answer"]
            assert isinstance(answer, str), q
            assert answer.strip(), q
        if q["kind"] == "multi":
            assert len(gold) >= 2, q


def test_ids_run_in_order_from_g001() -> None:
    ids = [str(q["id"]) for q in load_questions()]
    assert ids == [f"g{n:03d}" for n in range(1, len(ids) + 1)]


def test_kind_mix() -> None:
    counts = Counter(str(q["kind"]) for q in load_questions())
    assert counts["fact"] >= 20
    assert counts["broad"] >= 8
    assert counts["multi"] >= 6
    assert counts["paraphrase"] >= 10
    assert counts["unanswerable"] >= 10


@pytest.mark.parametrize(("qid", "entry"), gold_params())
def test_gold_phrase_is_plain_prose(qid: str, entry: dict[str, str]) -> None:
    assert set(entry) == {"file", "heading_path", "must_contain"}, qid
    phrase = entry["must_contain"]
    assert 3 <= len(phrase.split()) <= 8, f"{qid}: phrase should be 3-8 words: {phrase!r}"
    assert not MARKUP.search(phrase), f"{qid}: phrase contains Markdown markup: {phrase!r}"
    assert entry["heading_path"].strip(), qid


@pytest.mark.parametrize(("qid", "entry"), gold_params())
def test_gold_phrase_occurs_in_gold_file(qid: str, entry: dict[str, str]) -> None:
    relative = entry["file"]
    assert "\\" not in relative, relative
    assert not relative.startswith("/"), relative
    assert relative.endswith(".md"), relative
    assert (corpus() / relative).is_file(), f"{qid}: {relative} does not exist"
    phrase = entry["must_contain"]
    assert sample.normalise(phrase) in document_body(relative), (
        f"{qid}: {phrase!r} not in {relative}"
    )


def test_heading_path_starts_with_the_document_title() -> None:
    root = corpus()
    for qid, entry in sample.gold_entries(QUESTIONS):
        head = (root / entry["file"]).read_text(encoding="utf-8").split("\n---\n", 1)[0]
        titles = re.findall(r"^title: *(.+)$", head, flags=re.MULTILINE)
        assert titles, f"{qid}: {entry['file']} has no title in its front matter"
        assert entry["heading_path"].split(" > ")[0] == titles[0].strip(), qid
