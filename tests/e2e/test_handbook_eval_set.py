"""The question set over the Sourcegraph handbook is well formed, and its gold is in the handbook.

Plain Python on purpose, like test_dev_eval_set.py: no project imports, so a loader bug cannot hide
a broken question (or the other way round). The corpus is kept in the repository, in
data/corpora/sourcegraph-handbook/ (Apache 2.0).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import eval_sets
from tests.support.paths import ROOT

QUESTIONS = ROOT / "data" / "eval" / "sourcegraph-handbook.jsonl"
CORPUS = ROOT / "data" / "corpora" / "sourcegraph-handbook" / "content"


def load_questions() -> list[dict[str, object]]:
    return eval_sets.load_questions(QUESTIONS)


def corpus() -> Path:
    assert CORPUS.is_dir(), f"corpus not found at {CORPUS}"
    return CORPUS


def test_questions_are_well_formed() -> None:
    eval_sets.assert_well_formed(load_questions(), "h", 90)


def test_ids_run_in_order_from_h001() -> None:
    eval_sets.assert_ids_in_order(load_questions(), "h")


def test_kind_mix() -> None:
    eval_sets.assert_kind_mix(
        load_questions(),
        {"fact": 25, "broad": 10, "multi": 8, "paraphrase": 22, "unanswerable": 27},
    )


def test_no_question_is_asked_twice() -> None:
    eval_sets.assert_asked_once(load_questions())


def test_multi_questions_point_at_two_different_passages() -> None:
    eval_sets.assert_gold_passages_distinct(load_questions())


@pytest.mark.parametrize(("qid", "entry"), eval_sets.gold_params(QUESTIONS))
def test_gold_phrase_is_plain_prose(qid: str, entry: dict[str, str]) -> None:
    eval_sets.assert_plain_prose_phrase(qid, entry)


@pytest.mark.parametrize(("qid", "entry"), eval_sets.gold_params(QUESTIONS))
def test_gold_phrase_occurs_in_gold_file(qid: str, entry: dict[str, str]) -> None:
    eval_sets.assert_phrase_in_markdown(qid, entry, corpus())


def test_heading_path_starts_with_the_document_title() -> None:
    root = corpus()
    for qid, entry in eval_sets.gold_entries(QUESTIONS):
        first = (root / entry["file"]).read_text(encoding="utf-8").splitlines()[0]
        title = re.fullmatch(r"# +(.+)", first)
        assert title, f"{qid}: {entry['file']} does not open with a # title"
        assert entry["heading_path"].split(" > ")[0] == title.group(1).strip("* "), qid


def test_every_figure_of_a_reference_answer_is_in_its_gold_documents() -> None:
    """The answer evaluation looks for these figures, so a figure the handbook lacks is a bug."""
    root = corpus()
    for q in load_questions():
        gold = q["gold"]
        assert isinstance(gold, list)
        if not gold:
            continue
        stated = set().union(
            *(eval_sets.figures(eval_sets.markdown_body(root / e["file"])) for e in gold)
        )
        missing = eval_sets.figures(str(q["answer"])) - stated
        assert not missing, f"{q['id']}: {sorted(missing)} not in its gold documents"
