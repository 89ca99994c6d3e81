"""The retriever makes any question valid Unicode before a tokenizer sees it (D11)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from tests.support.retrieval_helpers import FakeEmbedder as HelperEmbedder
from tests.support.retrieval_helpers import make_retriever, make_snapshot, policy_corpus


def test_the_retriever_makes_a_question_valid_unicode_before_tokenising() -> None:
    """D11: any caller (UI, eval, CLI) may pass a lone surrogate; nothing reaches a tokenizer."""

    class StrictEmbedder(HelperEmbedder):
        def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
            for text in texts:
                text.encode("utf-8")  # as the real tokenizer: lone surrogates raise
            return super().embed(texts)

    embedder = StrictEmbedder()
    chunks, docs = policy_corpus()
    retriever = make_retriever(make_snapshot(chunks, docs, embedder=embedder), embedder)
    result = retriever.search("card \ud800 replacement \udcff")
    assert result.hits[0].chunk.source == "finance/fees.md"
    "\n".join((result.query, *result.trace)).encode("utf-8")  # raises on a surrogate
