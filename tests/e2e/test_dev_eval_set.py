"""The dev question set over the real GitHub site-policy corpus is well formed and answerable.

Plain Python on purpose, like test_sample_eval_set.py: no project imports, so a loader bug cannot
hide a broken question (or the other way round). The corpus is kept in the
repository, in data/corpora/github-site-policy/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import eval_sets
from tests.support.paths import ROOT

QUESTIONS = ROOT / "data" / "eval" / "github-site-policy.jsonl"
CORPUS = ROOT / "data" / "corpora" / "github-site-policy" / "Policies"


def load_questions() -> list[dict[str, object]]:
    return eval_sets.load_questions(QUESTIONS)


def corpus() -> Path:
    assert CORPUS.is_dir(), f"corpus not found at {CORPUS}"
    return CORPUS


def test_questions_are_well_formed() -> None:
    eval_sets.assert_well_formed(load_questions(), "g", 60)


def test_ids_run_in_order_from_g001() -> None:
    eval_sets.assert_ids_in_order(load_questions(), "g")


def test_kind_mix() -> None:
    eval_sets.assert_kind_mix(
        load_questions(),
        {"fact": 20, "broad": 8, "multi": 6, "paraphrase": 10, "unanswerable": 10},
    )


@pytest.mark.parametrize(("qid", "entry"), eval_sets.gold_params(QUESTIONS))
def test_gold_phrase_is_plain_prose(qid: str, entry: dict[str, str]) -> None:
    eval_sets.assert_plain_prose_phrase(qid, entry)


@pytest.mark.parametrize(("qid", "entry"), eval_sets.gold_params(QUESTIONS))
def test_gold_phrase_occurs_in_gold_file(qid: str, entry: dict[str, str]) -> None:
    eval_sets.assert_phrase_in_markdown(qid, entry, corpus())


def test_heading_path_starts_with_the_document_title() -> None:
    root = corpus()
    for qid, entry in eval_sets.gold_entries(QUESTIONS):
        head = (root / entry["file"]).read_text(encoding="utf-8").split("\n---\n", 1)[0]
        titles = re.findall(r"^title: *(.+)$", head, flags=re.MULTILINE)
        assert titles, f"{qid}: {entry['file']} has no title in its front matter"
        assert entry["heading_path"].split(" > ")[0] == titles[0].strip(), qid
