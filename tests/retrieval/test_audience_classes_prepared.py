"""After an ingest, every audience class a reader served has its structures built before
its first question (issue 28: that question used to wait for its BM25 build, 6.7 s at 100k
chunks for a user reading 90 %). A real index, a real retriever kept open across an ingest."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from assistant.index.ingest import ingest
from assistant.retrieval.factory import open_retriever
from assistant.retrieval.retriever import Retriever
from assistant.types import ADMIN_GROUP, ANONYMOUS, User
from tests.conftest import FakeEmbedder
from tests.test_access import settings_for, write

HR = User("hana", frozenset({"hr"}))
ADMIN = User("root", frozenset({ADMIN_GROUP}))
BOARD = User("bo", frozenset({"board"}))


def _corpus(root: Path) -> Path:
    files = {
        f"policy-{n}.md": f"# Policy {n}\n\n## Topic {n}\n\nRoutine text {n} on office matters.\n"
        for n in range(8)
    }
    files["hr/pay.md"] = "# Pay\n\n## Bands\n\nPay bands are reviewed each April.\n"
    files["board/minutes.md"] = "# Minutes\n\n## Quorum\n\nThe quorum is seven.\n"
    files[".access"] = "hr/** -> hr\nboard/** -> board\n"
    return write(root, files)


def _settle(retriever: Retriever, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not retriever.refreshed():
        assert time.monotonic() < deadline, "the reader never caught up"
        retriever.search("routine", user=ANONYMOUS)
        time.sleep(0.02)


@pytest.mark.slow
def test_known_audience_classes_are_ready_before_their_first_question_after_an_ingest(
    tmp_path: Path,
) -> None:
    docs = _corpus(tmp_path / "docs")
    settings = settings_for(tmp_path / "idx")
    embedder = FakeEmbedder()
    ingest([docs], settings=settings, embedder=embedder)
    retriever = open_retriever(settings, embedder=embedder)
    for user in (ANONYMOUS, HR, ADMIN):  # the classes this reader has served
        retriever.search("pay bands", user=user)

    (docs / "hr/pay.md").write_text("# Pay\n\n## Bands\n\nPay bands are reviewed each October.\n")
    (docs / "policy-3.md").write_text("# Policy 3\n\n## Topic 3\n\nA sabbatical lasts a term.\n")
    ingest([docs], settings=settings, embedder=embedder)
    _settle(retriever)  # only anonymous questions while the reader catches up

    assert retriever.prepared_for(HR)
    assert retriever.prepared_for(ADMIN)
    assert not retriever.prepared_for(BOARD)  # a class never served is built on demand
    # The patched class structures rank as a reader opened afresh does (scores differ a
    # little: a patch keeps the replaced rows' statistics until the next full build).
    lexical = replace(retriever.settings, mode="lexical")
    retriever.settings = lexical
    fresh = open_retriever(settings, embedder=embedder)
    fresh.settings = lexical
    for question in ("pay bands reviewed October", "sabbatical term", "routine office"):
        got = retriever.search(question, user=HR).hits
        want = fresh.search(question, user=HR).hits
        assert [h.chunk.chunk_id for h in got] == [h.chunk.chunk_id for h in want]
    assert "October" in retriever.search("pay bands reviewed", user=HR).hits[0].chunk.text
