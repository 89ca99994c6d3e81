"""An ingest that grants a user a document is seen on that user's very next question
(issue 27, D29): a real index of about 300 chunks, a real retriever kept open across
real ingests, as a running UI or API worker keeps it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from assistant.index.ingest import ingest
from assistant.retrieval.factory import open_retriever
from assistant.types import User
from tests.conftest import FakeEmbedder
from tests.test_access import settings_for, write

CAROL = User("carol", frozenset({"board"}))


def _corpus(root: Path) -> Path:
    files = {
        f"policy-{n:02d}.md": "".join(
            f"## Topic {n} part {p}\n\nRoutine text {n} {p} about office matters.\n\n"
            for p in range(10)
        ).join((f"# Policy {n}\n\n", ""))
        for n in range(30)
    }
    files["board/merger.md"] = "# Merger\n\n## Codename\n\nThe merger codename is NIGHTINGALE.\n"
    return write(root, files)


def test_the_first_question_after_a_grant_sees_the_document(tmp_path: Path) -> None:
    docs = _corpus(tmp_path / "docs")
    settings = settings_for(tmp_path / "idx")
    # The mechanism, not the speed: a question waits up to refresh_wait_s for the patch
    # (1 s by default), and at a load average of 14 the patch took longer than that.
    settings = replace(settings, retrieval=replace(settings.retrieval, refresh_wait_s=30.0))
    embedder = FakeEmbedder()
    access = docs / ".access"
    access.write_text("board/** -> board\n")
    ingest([docs], settings=settings, embedder=embedder)
    retriever = open_retriever(settings, embedder=embedder)
    assert len(retriever.snapshot().chunks) >= 300

    def sees() -> bool:
        hits = retriever.search("merger codename NIGHTINGALE", user=CAROL).hits
        return any(hit.chunk.source == "board/merger.md" for hit in hits)

    assert sees()
    for _ in range(3):  # the red team's loop: narrow, then grant again, then ask once
        access.write_text("board/** -> execs\n")
        ingest([docs], settings=settings, embedder=embedder)
        assert not sees()  # a restriction is obeyed at once
        access.write_text("board/** -> board\n")
        ingest([docs], settings=settings, embedder=embedder)
        assert sees()  # and so, now, is the grant
