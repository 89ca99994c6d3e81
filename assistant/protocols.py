"""The seams between the assistant's parts, as structural types.

Production classes implement these; tests substitute small fakes that speak
the same protocol (or, for the model servers, the same wire protocol).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from assistant.types import (
    ANONYMOUS,
    Answer,
    SearchFilters,
    SearchResult,
    TokenVectors,
    Turn,
    User,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "AnswerStream",
    "ChatModel",
    "ChatService",
    "Embedder",
    "Reader",
    "Searcher",
    "TokenEmbedder",
]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    ``identity`` names the model precisely enough that two embedders with the
    same identity produce compatible vectors; the index records it.
    """

    @property
    def identity(self) -> str:
        """Return a stable name of the model, e.g. ``local:all-MiniLM-L6-v2:int8``."""
        ...

    @property
    def dimension(self) -> int:
        """Return the length of each vector."""
        ...

    @property
    def max_input_tokens(self) -> int:
        """Return how many of the model's own tokens it reads before truncating."""
        ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Return each text's length in the model's own tokens (special tokens included)."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Return one row per text, in input order.

        Raises:
            EmbeddingError: The model failed.
        """
        ...


class TokenEmbedder(Embedder, Protocol):
    """An embedder that also returns each text's word-piece vectors from the same run."""

    def embed_tokens(
        self, texts: Sequence[str]
    ) -> tuple[npt.NDArray[np.float32], list[TokenVectors]]:
        """Return `embed`'s rows and each text's `TokenVectors`, in input order.

        Raises:
            EmbeddingError: The model failed.
        """
        ...


class Reader(Protocol):
    """Reads a question against passages: how likely each one answers it.

    The offline answerer's understanding: a small cross-encoder trained for policy
    questions (``assistant.embeddings.reader``), or a fake in tests.
    """

    @property
    def identity(self) -> str:
        """Return a stable name of the model and its file's hash (``reader:NAME:SHA8``)."""
        ...

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        """Return one calibrated probability in [0, 1] per passage, in input order.

        Raises:
            EmbeddingError: The model failed.
        """
        ...


class Searcher(Protocol):
    """Finds the chunks that answer a question."""

    def search(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        user: User = ANONYMOUS,
    ) -> SearchResult:
        """Return the best hits ``user`` may read, best first, and whether any is a good match."""
        ...


class ChatModel(Protocol):
    """Streams a chat completion as text deltas."""

    def stream(self, messages: Sequence[dict[str, str]]) -> Iterator[str]:
        """Yield text deltas; closing the iterator closes the upstream request.

        Deltas of type `assistant.types.Reasoning` are the model's reasoning, not answer text.

        Raises:
            LLMError: The model failed; the message is safe to show a user.
        """
        ...


class AnswerStream(Protocol):
    """One answer being produced: sources first, then text deltas.

    ``result`` (the retrieval outcome) and ``query`` (the standalone query
    actually searched, after rewriting a follow-up) are known before the first
    delta. Iterating yields text deltas; ``close()`` stops generation and
    closes the upstream HTTP stream. ``answer()`` is the checked final answer,
    valid once iteration has finished. ``error`` holds a user-safe message
    when generation failed part way (the deltas so far are kept). Deltas and the
    answer's text are already neutralised for a browser (`assistant.answering.safety`,
    with the ``allowed_hosts`` given to `ChatService.ask`): renderers show them as
    they are, so output is neutralised once, by the service.
    """

    result: SearchResult
    query: str
    error: str

    def __iter__(self) -> Iterator[str]: ...

    @property
    def mode(self) -> str:
        """Return how it answers: ``extractive``, ``model`` or ``no good match``.

        Known from the start; a model's "not covered" makes it ``no good match`` once
        iteration has ended.
        """
        ...

    @property
    def reasoning(self) -> str:
        """Return the model's reasoning so far (raw text; "" without a reasoning model)."""
        ...

    @property
    def banner(self) -> str:
        """Return the label of how the answer is made, never part of its text ("": none).

        Known after the first delta (an answer that falls back offline gets its label then).
        """
        ...

    @property
    def timings_ms(self) -> Mapping[str, float]:
        """Return the timings measured so far (``retrieval``, ``first token``, ``total``)."""
        ...

    def close(self) -> None:
        """Stop generating and release the upstream connection."""
        ...

    def answer(self) -> Answer:
        """Return the final answer with checked citations."""
        ...

    def trace(self) -> tuple[str, ...]:
        """Return human-readable lines explaining retrieval, prompt size and timings."""
        ...


class ChatService(Protocol):
    """Answers a question in the context of a conversation."""

    def ask(
        self,
        question: str,
        history: Sequence[Turn] = (),
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        user: User = ANONYMOUS,
    ) -> AnswerStream:
        """Start answering ``question``; nothing is sent upstream until iteration."""
        ...
