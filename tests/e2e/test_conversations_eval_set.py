"""The conversation set (follow-ups and topic changes over the three corpora) is well formed.

Plain Python on purpose, like the question-set checks: no project imports. The measurement of
query rewriting over this file lives elsewhere; this only guards the data it relies on.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.support import eval_sets
from tests.support.paths import ROOT

CONVERSATIONS = ROOT / "data" / "eval" / "conversations.jsonl"
CORPORA = {
    "sample": ROOT / "data" / "policies",
    "github-site-policy": ROOT / "data" / "corpora" / "github-site-policy" / "Policies",
    "sourcegraph-handbook": ROOT / "data" / "corpora" / "sourcegraph-handbook" / "content",
}


def load_conversations() -> list[dict[str, object]]:
    lines = CONVERSATIONS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def turns_of(conversation: dict[str, object]) -> list[dict[str, object]]:
    turns = conversation["turns"]
    assert isinstance(turns, list), conversation["id"]
    return turns


def last_turn_gold() -> list[object]:
    params: list[object] = []
    for conversation in load_conversations():
        gold = turns_of(conversation)[-1].get("gold", [])
        assert isinstance(gold, list), conversation["id"]
        for entry in gold:
            cid = str(conversation["id"])
            params.append(
                pytest.param(cid, str(conversation["set"]), entry, id=f"{cid}-{entry['file']}")
            )
    return params


def words(value: object) -> list[str]:
    assert isinstance(value, list), value
    assert value, value
    assert all(isinstance(word, str) and word.strip() for word in value), value
    return [eval_sets.normalise(word) for word in value]


def test_conversations_are_numbered_and_name_their_corpus() -> None:
    conversations = load_conversations()
    assert len(conversations) >= 36
    ids = [str(c["id"]) for c in conversations]
    assert ids == [f"c{n:03d}" for n in range(1, len(ids) + 1)]
    for conversation in conversations:
        assert set(conversation) == {"id", "set", "turns"}, conversation["id"]
        assert conversation["set"] in CORPORA, conversation["id"]
        assert 2 <= len(turns_of(conversation)) <= 3, conversation["id"]


def test_each_turn_says_whether_it_follows_up() -> None:
    for conversation in load_conversations():
        cid = conversation["id"]
        first, *later = turns_of(conversation)
        assert set(first) == {"question"}, cid
        for turn in later:
            question = turn["question"]
            assert isinstance(question, str), cid
            assert question.strip(), cid
            if turn["follow_up"] is True:
                assert {"question", "follow_up", "keeps"} <= set(turn), cid
                assert "drops" not in turn, cid
            else:
                assert turn["follow_up"] is False, cid
                assert {"question", "follow_up", "drops"} <= set(turn), cid
                assert "keeps" not in turn, cid


def test_kept_and_dropped_words_come_from_earlier_turns_not_from_the_question() -> None:
    """A kept word the follow-up already says, or a dropped word never said, tests nothing."""
    for conversation in load_conversations():
        cid = conversation["id"]
        turns = turns_of(conversation)
        for position, turn in enumerate(turns[1:], start=1):
            earlier = eval_sets.normalise(" ".join(str(t["question"]) for t in turns[:position]))
            own = eval_sets.normalise(str(turn["question"]))
            for word in words(turn.get("keeps") or turn.get("drops")):
                assert word in earlier, f"{cid}: {word!r} is not in an earlier turn"
                assert word not in own, f"{cid}: {word!r} is already in the question itself"


def test_only_the_last_turn_is_scored_and_it_is_answerable_or_not() -> None:
    scored = {"gold", "answer", "unanswerable"}
    for conversation in load_conversations():
        cid = conversation["id"]
        *before, last = turns_of(conversation)
        assert all(not scored & set(turn) for turn in before), cid
        if "unanswerable" in last:
            assert last["unanswerable"] is True, cid
            assert "gold" not in last, cid
            assert "answer" not in last, cid
        else:
            gold = last["gold"]
            assert isinstance(gold, list), cid
            assert gold, cid
            answer = last["answer"]
            assert isinstance(answer, str), cid
            assert answer.strip(), cid


def test_half_topic_changes_half_follow_ups_over_every_corpus() -> None:
    conversations = load_conversations()
    ends = Counter("follow-up" if turns_of(c)[-1]["follow_up"] else "change" for c in conversations)
    assert ends["follow-up"] >= 18, ends
    assert ends["change"] >= 18, ends
    assert abs(ends["follow-up"] - ends["change"]) <= 2, ends
    per_set = Counter(str(c["set"]) for c in conversations)
    assert all(per_set[name] >= 10 for name in CORPORA), per_set
    unanswered = [c for c in conversations if turns_of(c)[-1].get("unanswerable")]
    assert any(turns_of(c)[-1]["follow_up"] for c in unanswered), (
        "no follow-up the corpus leaves open"
    )
    assert any(not turns_of(c)[-1]["follow_up"] for c in unanswered), "no unanswerable new topic"


@pytest.mark.parametrize(("cid", "corpus", "entry"), last_turn_gold())
def test_gold_phrase_is_plain_prose_in_its_file(
    cid: str, corpus: str, entry: dict[str, str]
) -> None:
    eval_sets.assert_plain_prose_phrase(cid, entry)
    root = CORPORA[corpus]
    assert Path(entry["file"]).suffix in {".md", ".txt"}, f"{cid}: gold must be a text file"
    assert (root / entry["file"]).is_file(), f"{cid}: {entry['file']} does not exist"
    phrase = eval_sets.normalise(entry["must_contain"])
    assert phrase in eval_sets.markdown_body(root / entry["file"]), f"{cid}: {phrase!r} not in file"


def test_every_figure_of_a_reference_answer_is_in_its_gold_documents() -> None:
    for conversation in load_conversations():
        last = turns_of(conversation)[-1]
        if last.get("unanswerable"):
            continue
        root = CORPORA[str(conversation["set"])]
        gold = last["gold"]
        assert isinstance(gold, list)
        stated = set().union(
            *(eval_sets.figures(eval_sets.markdown_body(root / e["file"])) for e in gold)
        )
        missing = eval_sets.figures(str(last["answer"])) - stated
        assert not missing, f"{conversation['id']}: {sorted(missing)} not in its gold documents"
