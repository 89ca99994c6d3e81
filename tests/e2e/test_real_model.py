"""The product against a real OpenAI-compatible server: llama.cpp (xllamacpp), SmolLM2-135M.

SmolLM2 is tiny and says what it likes, so these tests assert invariants of what the
user reads, never wording: deltas stream and join, every citation points at a source,
every figure the sources do not state in any form is marked (or withheld), an answer
citing nothing is flagged on top, Stop closes the HTTP stream, and errors come back as
clear messages.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import replace

import pytest

from assistant.answering.citations import MARKER, cited_numbers
from assistant.answering.figures import derived, stated, unsupported
from assistant.answering.grounding import (
    NO_CITATION_WARNING,
    UNSUPPORTED_MARK,
    evidence_text,
)
from assistant.answering.llm import LENGTH_NOTE, OpenAIChat
from assistant.answering.rewrite import QueryRewriter
from assistant.answering.service import build_assistant
from assistant.config import LLMSettings, RetrievalSettings, Settings, StoreSettings
from assistant.errors import LLMError
from assistant.index.ingest import ingest
from assistant.retrieval.factory import open_retriever
from assistant.types import Answer, Turn
from tests.conftest import ROOT, FakeEmbedder
from tests.support.llama_server import CANCELLED, LlamaServer, llm_venv_python

pytestmark = pytest.mark.llm

QUESTIONS = (
    "What is the emergency loan interest rate?",
    "Who approves a loan above KES 1,000,000?",
    "What is the canteen menu on Fridays?",
)


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    python = llm_venv_python()
    if python is None:
        if os.environ.get("CI"):
            pytest.fail("CI must test the real model: scripts/setup_llm.sh did not run")
        pytest.skip("no .venv-llm: run scripts/setup_llm.sh (./test.sh does)")
    server = LlamaServer(python, tmp_path_factory.mktemp("llama") / "server.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def settings(llama: LlamaServer, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    index = tmp_path_factory.mktemp("index")
    llm = LLMSettings(base_url=llama.base_url, model=llama.model, timeout=60, max_tokens=96)
    # A smaller prompt than the default 3,000 tokens keeps each answer to a few seconds
    # on two busy cores; the invariants do not depend on its size.
    retrieval = RetrievalSettings(context_tokens=1200)
    configured = Settings(store=StoreSettings(path=index), llm=llm, retrieval=retrieval)
    ingest([ROOT / "data" / "policies"], settings=configured, embedder=FakeEmbedder())
    return configured


def ask(settings: Settings, question: str) -> tuple[list[str], Answer, str]:
    service = build_assistant(settings, searcher=open_retriever(settings, embedder=FakeEmbedder()))
    run = service.ask(question)
    deltas = list(run)
    assert run.error == ""
    return deltas, run.answer(), run.mode


def marked_sentences(text: str) -> list[str]:
    """The sentences of ``text`` followed by the unsupported mark."""
    return [part.rsplit("\n", 1)[-1] for part in text.split(UNSUPPORTED_MARK)[:-1]]


@pytest.mark.parametrize("question", QUESTIONS)
def test_whatever_the_model_says_the_answer_keeps_the_invariants(
    settings: Settings, question: str
) -> None:
    deltas, answer, mode = ask(settings, question)
    assert mode in {"model", "no good match"}
    if mode == "no good match":
        assert not answer.citations
        return
    assert len(deltas) > 1  # streamed, not one block
    text = answer.text
    # Every citation points at a source of the prompt.
    assert all(1 <= n <= len(answer.sources) for n in cited_numbers(text))
    # Every figure that no source (nor the question) states in any ordinary form, nor
    # two of their figures make together, sits in a marked sentence (or was withheld).
    evidence = evidence_text(answer.sources) + " " + question
    body = MARKER.sub(" ", text.replace(NO_CITATION_WARNING, ""))
    marked = " ".join(marked_sentences(body))
    for figure in unsupported(body, known=stated(evidence), also=derived(evidence)):
        assert figure in marked, f"unmarked invented figure {figure!r} in {text!r}"
    # An answer that cites nothing says so first.
    if not answer.citations:
        assert text.startswith(NO_CITATION_WARNING)


def test_stop_closes_the_http_stream_and_the_server_sees_it(
    settings: Settings, llama: LlamaServer
) -> None:
    long = replace(settings, llm=replace(settings.llm, max_tokens=2000))
    service = build_assistant(long, searcher=open_retriever(long, embedder=FakeEmbedder()))
    before = llama.mark()
    run = service.ask("Explain every rule of the loan policy in detail, one by one.")
    stream = iter(run)
    next(stream)
    next(stream)
    run.close()
    # llama.cpp logs the task it cancels when the client goes away mid-answer.
    assert llama.wait_for_log(CANCELLED, since=before)
    # And the server is free again for the next question.
    chat = OpenAIChat(replace(settings.llm, max_tokens=16), max_retries=0)
    assert "".join(chat.stream([{"role": "user", "content": "Say hi."}]))


def test_a_prompt_over_the_context_window_is_a_clear_message(llama: LlamaServer) -> None:
    chat = OpenAIChat(
        LLMSettings(base_url=llama.base_url, model=llama.model, timeout=60, max_tokens=16),
        max_retries=0,
    )
    with pytest.raises(LLMError, match="context window"):
        "".join(chat.stream([{"role": "user", "content": "policy " * 6000}]))


def test_the_length_cap_ends_the_answer_with_a_visible_note(settings: Settings) -> None:
    capped = replace(settings, llm=replace(settings.llm, max_tokens=16))
    deltas, answer, mode = ask(capped, "Explain how guarantors work for loans.")
    if mode == "model":
        assert "".join(deltas).endswith(LENGTH_NOTE)
        assert "length limit" in answer.text


def test_a_follow_up_is_rewritten_by_the_real_model(settings: Settings) -> None:
    rewriter = QueryRewriter(completer=OpenAIChat(settings.llm, max_retries=0))
    history = (
        Turn("user", "What is the interest rate on emergency loans?"),
        Turn("assistant", "Emergency loans carry 12% per annum [1]."),
    )
    rewrite = rewriter.rewrite("and for development loans?", history)
    assert rewrite.method in {"llm", "heuristic"}
    assert rewrite.query.strip()
    assert len(rewrite.query) < 500
    assert re.search(r"\w", rewrite.query)
