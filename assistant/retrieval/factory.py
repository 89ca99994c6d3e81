"""Build the search stack from settings: embedder, index reader, retriever.

Only the session's composition root (`assistant.session.stack`) calls it, so every
door searches the same way.
"""

from __future__ import annotations

from assistant.config import Settings
from assistant.index.reader import IndexReader
from assistant.protocols import Embedder
from assistant.retrieval.retriever import Retriever
from assistant.tokens import get_tokenizer

__all__ = ["open_retriever"]


def open_retriever(settings: Settings, *, embedder: Embedder) -> Retriever:
    """Return a `Retriever` over the index in ``settings.store``.

    Args:
        settings: Where the index is, which model to embed queries with, and how to search.
        embedder: The embedding model the index was built with (the session's shared
            one, `assistant.session.stack.shared_embedder`, or a test's).

    Raises:
        AssistantError: The embedding model or tokenizer cannot be loaded.
    """
    reader = IndexReader(
        settings.store, embedder_identity=embedder.identity, dimension=embedder.dimension
    )
    return Retriever(
        reader,
        embedder,
        settings=settings.retrieval,
        tokenizer=get_tokenizer(settings.chunking.encoding),
    )
