"""Build the search stack from settings: embedder, index reader, retriever.

The search command, the evaluation and the web UI all answer from the same
stack; building it in one place keeps them searching the same way.
"""

from __future__ import annotations

from assistant.config import Settings
from assistant.index.reader import IndexReader
from assistant.protocols import Embedder
from assistant.retrieval.retriever import Retriever
from assistant.tokens import get_tokenizer

__all__ = ["open_retriever"]


def open_retriever(settings: Settings, *, embedder: Embedder | None = None) -> Retriever:
    """Return a `Retriever` over the index in ``settings.store``.

    Args:
        settings: Where the index is, which model to embed queries with, and how to search.
        embedder: Overrides the configured embedding model (tests, benchmarks,
            sweeps); it must be the one the index was built with.

    Raises:
        AssistantError: The embedding model or tokenizer cannot be loaded.
    """
    if embedder is None:
        from assistant.embeddings.factory import make_embedder

        embedder = make_embedder(settings.embedding)
    reader = IndexReader(
        settings.store, embedder_identity=embedder.identity, dimension=embedder.dimension
    )
    return Retriever(
        reader,
        embedder,
        settings=settings.retrieval,
        tokenizer=get_tokenizer(settings.chunking.encoding),
    )
