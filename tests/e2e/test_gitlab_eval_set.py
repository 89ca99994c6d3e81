"""The question set over GitLab's handbook pages is well formed, held out, and its gold is ingested.

The checks of the file are plain Python, like test_handbook_eval_set.py: no project imports, so a
loader bug cannot hide a broken question (or the other way round). The last test is the other
half: it ingests the folder with the project's own pipeline and default chunking and finds every
gold phrase inside one chunk of its file, under the heading path the set names. The corpus is kept
in the repository, in data/corpora/gitlab-handbook/ (CC BY-SA 4.0, see its SOURCE.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from tests.support import eval_sets
from tests.support.paths import ROOT

QUESTIONS = ROOT / "data" / "eval" / "gitlab-handbook.jsonl"
CORPUS = ROOT / "data" / "corpora" / "gitlab-handbook" / "handbook"
TRAINING = ROOT / "data" / "training" / "reader"
# The set is held out of the reader's training: no question may share this much of its words
# with a training question (word Jaccard), whichever corpus that question was written over.
NEAR_DUPLICATE = 0.6


def load_questions() -> list[dict[str, object]]:
    return eval_sets.load_questions(QUESTIONS)


def corpus() -> Path:
    assert CORPUS.is_dir(), f"corpus not found at {CORPUS}"
    return CORPUS


def words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"[a-z0-9]+", text.lower()))


def test_questions_are_well_formed() -> None:
    eval_sets.assert_well_formed(load_questions(), "gl", 90)


def test_ids_run_in_order_from_gl001() -> None:
    eval_sets.assert_ids_in_order(load_questions(), "gl")


def test_kind_mix() -> None:
    eval_sets.assert_kind_mix(
        load_questions(),
        {"fact": 30, "broad": 8, "multi": 8, "paraphrase": 30, "unanswerable": 16},
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


def test_heading_path_starts_with_the_front_matter_title() -> None:
    eval_sets.assert_heading_paths_start_with_front_matter_title(QUESTIONS, corpus())


def test_every_figure_of_a_reference_answer_is_in_its_gold_documents() -> None:
    """The answer evaluation looks for these figures, so a figure the pages lack is a bug."""
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


def test_no_question_is_a_near_duplicate_of_a_training_question() -> None:
    files = sorted(TRAINING.glob("questions-*.jsonl"))
    assert files, f"no training questions under {TRAINING}"
    trained = [words(str(r["question"])) for f in files for r in eval_sets.load_questions(f)]
    for q in load_questions():
        asked = words(str(q["question"]))
        closest = max(len(asked & t) / len(asked | t) for t in trained)
        assert closest < NEAR_DUPLICATE, f"{q['id']} is {closest:.2f} like a training question"


class _ModelWindowEmbedder:
    """Hashed vectors, but the packaged model's token counts: so the ingest cuts the chunks the
    default ingest cuts (chunk sizes are counted in the embedder's tokens) without embedding."""

    def __init__(self) -> None:
        from assistant.config import EmbeddingSettings
        from assistant.embeddings import make_embedder
        from tests.conftest import FakeEmbedder

        self._vectors = FakeEmbedder()
        self._model = make_embedder(EmbeddingSettings())

    @property
    def identity(self) -> str:
        return f"{self._vectors.identity}+window:{self._model.identity}"

    @property
    def dimension(self) -> int:
        return self._vectors.dimension

    @property
    def max_input_tokens(self) -> int:
        return self._model.max_input_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._model.count_tokens(texts)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._vectors.embed(texts)


@pytest.mark.slow
def test_every_gold_phrase_lies_in_one_chunk_under_its_heading_path(tmp_path: Path) -> None:
    """What `eval` counts as found: a chunk of the gold file whose text holds the phrase."""
    from assistant.config import Settings, StoreSettings
    from assistant.index.ingest import ingest
    from assistant.index.reader import IndexReader

    settings = replace(Settings(), store=StoreSettings(path=tmp_path / "index"))
    embedder = _ModelWindowEmbedder()
    report = ingest([corpus()], settings=settings, embedder=embedder)
    assert not report.problems, report.problems
    reader = IndexReader(
        settings.store, embedder_identity=embedder.identity, dimension=embedder.dimension
    )
    chunks = reader.snapshot().chunks
    assert {c.source for c in chunks} == {
        p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*.md")
    }
    for qid, entry in eval_sets.gold_entries(QUESTIONS):
        phrase = eval_sets.normalise(entry["must_contain"])
        holding = [
            c for c in chunks if c.source == entry["file"] and phrase in eval_sets.normalise(c.text)
        ]
        assert holding, f"{qid}: no chunk of {entry['file']} holds {entry['must_contain']!r}"
        paths = {" > ".join(c.heading_path) for c in holding}
        assert entry["heading_path"] in paths, f"{qid}: {entry['heading_path']!r} not in {paths}"
