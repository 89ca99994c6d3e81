"""Reading and checking the evaluation question sets in data/eval/, without the project's loaders.

Plain Python on purpose: a loader bug must not hide a broken question (or the other way round).
The sample, GitHub site-policy and Sourcegraph handbook sets share these checks.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import pytest

KINDS = {"fact", "broad", "multi", "paraphrase", "unanswerable"}
# Markdown syntax a phrase must not contain: it has to come from plain prose between markup.
MARKUP = re.compile(r"[\[\]()*_`#|]")
# Figures as the answer evaluation reads them: "1,850" and "1850" are the same figure.
FIGURE = re.compile(r"\d+(?:[.,]\d+)*")


def normalise(text: str) -> str:
    return " ".join(text.lower().split())


def load_questions(path: Path) -> list[dict[str, object]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def gold_entries(path: Path) -> list[tuple[str, dict[str, str]]]:
    entries = []
    for question in load_questions(path):
        gold = question["gold"]
        assert isinstance(gold, list)
        entries += [(str(question["id"]), entry) for entry in gold]
    return entries


def gold_params(path: Path) -> list[object]:
    return [
        pytest.param(qid, entry, id=f"{qid}-{entry['file']}") for qid, entry in gold_entries(path)
    ]


def markdown_body(path: Path) -> str:
    """Return the normalised text of a Markdown file, without its YAML front matter if any."""
    text = path.read_text(encoding="utf-8")
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        assert end != -1, f"{path.name}: unterminated front matter"
        text = text[end + 5 :]
    return normalise(text)


def figures(text: str) -> set[str]:
    return {match.replace(",", "") for match in FIGURE.findall(text)}


def assert_well_formed(questions: list[dict[str, object]], prefix: str, minimum: int) -> None:
    """Ids are unique, kinds known, gold and reference answer present exactly when answerable."""
    ids = [q["id"] for q in questions]
    assert len(questions) >= minimum
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
    for q in questions:
        assert re.fullmatch(rf"{prefix}\d{{3}}", str(q["id"])), q["id"]
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
            assert_follow_up(q, {other["question"] for other in questions})
            assert gold, q
            answer = q["answer"]
            assert isinstance(answer, str), q
            assert answer.strip(), q
        if q["kind"] == "multi":
            assert len(gold) >= 2, q


def assert_follow_up(q: dict[str, object], asked: set[object]) -> None:
    """An optional two-turn way to ask ``q``: ``after`` is another question of the set."""
    if "follow_up" not in q:
        return
    follow_up = q["follow_up"]
    assert isinstance(follow_up, dict), q
    assert set(follow_up) == {"after", "question"}, q
    assert follow_up["after"] in asked, q
    assert isinstance(follow_up["question"], str), q
    assert follow_up["question"].strip(), q
    assert q["gold"], "a follow-up of an unanswerable question has no answer to reach"


def assert_ids_in_order(questions: list[dict[str, object]], prefix: str) -> None:
    ids = [str(q["id"]) for q in questions]
    assert ids == [f"{prefix}{n:03d}" for n in range(1, len(ids) + 1)]


def assert_kind_mix(questions: list[dict[str, object]], minimums: Mapping[str, int]) -> None:
    counts = Counter(str(q["kind"]) for q in questions)
    short = {kind: counts[kind] for kind, least in minimums.items() if counts[kind] < least}
    assert not short, f"too few questions of these kinds: {short} (wanted {dict(minimums)})"


def assert_plain_prose_phrase(qid: str, entry: dict[str, str]) -> None:
    assert set(entry) == {"file", "heading_path", "must_contain"}, qid
    phrase = entry["must_contain"]
    assert 3 <= len(phrase.split()) <= 8, f"{qid}: phrase should be 3-8 words: {phrase!r}"
    assert not MARKUP.search(phrase), f"{qid}: phrase contains Markdown markup: {phrase!r}"
    assert entry["heading_path"].strip(), qid


def assert_phrase_in_markdown(qid: str, entry: dict[str, str], corpus: Path) -> None:
    relative = entry["file"]
    assert "\\" not in relative, relative
    assert not relative.startswith("/"), relative
    assert relative.endswith(".md"), relative
    assert (corpus / relative).is_file(), f"{qid}: {relative} does not exist"
    phrase = entry["must_contain"]
    assert normalise(phrase) in markdown_body(corpus / relative), (
        f"{qid}: {phrase!r} not in {relative}"
    )


def assert_asked_once(questions: list[dict[str, object]]) -> None:
    """Assert that no question text (normalised) appears twice."""
    texts = [normalise(str(q["question"])) for q in questions]
    assert len(texts) == len(set(texts)), [t for t in texts if texts.count(t) > 1]


def assert_gold_passages_distinct(questions: list[dict[str, object]]) -> None:
    """Assert that no question lists the same (file, phrase) gold passage twice."""
    for q in questions:
        gold = q["gold"]
        assert isinstance(gold, list)
        passages = {(entry["file"], normalise(entry["must_contain"])) for entry in gold}
        assert len(passages) == len(gold), q["id"]


def assert_heading_paths_start_with_front_matter_title(path: Path, corpus: Path) -> None:
    """Assert each gold heading path opens with its file's front-matter ``title``."""
    for qid, entry in gold_entries(path):
        head = (corpus / entry["file"]).read_text(encoding="utf-8").split("\n---\n", 1)[0]
        titles = re.findall(r"^title: *(.+)$", head, flags=re.MULTILINE)
        assert titles, f"{qid}: {entry['file']} has no title in its front matter"
        assert entry["heading_path"].split(" > ")[0] == titles[0].strip().strip('"'), qid
