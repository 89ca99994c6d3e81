"""A `chroma run` server restarted in the middle of an answer, and while a reader patches
an edit (round three, own faults): the answer completes, nothing stale is served, and the
next question works. Real server, real ingests, the offline answerer."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from assistant.answering.service import build_assistant
from assistant.config import Settings, StoreSettings
from assistant.index.ingest import ingest
from assistant.retrieval.factory import open_retriever
from assistant.retrieval.retriever import Retriever
from tests.conftest import ChromaServer, FakeEmbedder
from tests.support.tiny_corpus import TINY_CORPUS, write_docs

pytestmark = [pytest.mark.server, pytest.mark.slow]


def _settings(tmp_path: Path, server: ChromaServer) -> Settings:
    store = StoreSettings(path=tmp_path / "lock", host="127.0.0.1", port=server.port)
    return replace(Settings(), store=store)


def _opened(tmp_path: Path, server: ChromaServer) -> tuple[Path, Settings, Retriever]:
    docs = write_docs(tmp_path / "docs", TINY_CORPUS)
    settings = _settings(tmp_path, server)
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    retriever = open_retriever(settings, embedder=FakeEmbedder())
    return docs, settings, retriever


def test_an_answer_completes_across_a_server_restart_and_the_next_question_works(
    tmp_path: Path, chroma_server: ChromaServer
) -> None:
    _, settings, retriever = _opened(tmp_path, chroma_server)
    assistant = build_assistant(settings, searcher=retriever, embedder=FakeEmbedder())
    run = assistant.ask("How many days of annual leave do staff get?")
    pieces = iter(run)
    first = next(pieces)

    chroma_server.stop()
    chroma_server.start()
    text = first + "".join(pieces)

    assert "25 days" in text
    assert not run.error
    after = assistant.ask("How many days of annual leave do staff get?")
    assert "25 days" in "".join(after)


def test_a_server_restarted_while_a_reader_patches_serves_nothing_stale(
    tmp_path: Path, chroma_server: ChromaServer
) -> None:
    docs, settings, retriever = _opened(tmp_path, chroma_server)
    retriever.search("annual leave")
    (docs / "leave.md").write_text(TINY_CORPUS["leave.md"].replace("25 days", "30 days"))
    ingest([docs], settings=settings, embedder=FakeEmbedder())

    chroma_server.stop()
    during = retriever.search("annual leave days")  # from memory: the server is down
    chroma_server.start()
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while not any("30 days" in t for t in seen):
        assert time.monotonic() < deadline, "the edit never showed after the restart"
        texts = [h.chunk.text for h in retriever.search("annual leave days").hits]
        # Once the server answers, the new generation is seen and the old text masked.
        assert not any("25 days" in t for t in texts), texts
        seen += texts
        time.sleep(0.1)

    assert during.hits  # answered while the server was down
