"""Embedders: the local ONNX model by default, or an OpenAI-compatible server.

`make_embedder` turns `EmbeddingSettings` into a shared `Embedder`; nothing is
loaded or contacted until the first ``embed`` or ``count_tokens`` call. The SDK
(`assistant.openai_api`) is imported only when an `OpenAIEmbedder` is made (it takes
~0.7 s, wasted on the local path).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from assistant.config import DEFAULT_ENCODING, EmbeddingSettings
from assistant.embeddings.local import OnnxEmbedder
from assistant.errors import EmbeddingError
from assistant.tokens import get_tokenizer

if TYPE_CHECKING:
    import httpx2

    from assistant import openai_api
    from assistant.protocols import Embedder

__all__ = ["OnnxEmbedder", "OpenAIEmbedder", "make_embedder", "make_openai_client"]

logger = logging.getLogger(__name__)

OPENAI_MAX_INPUT_TOKENS = 8191


@lru_cache(maxsize=8)
def make_embedder(settings: EmbeddingSettings) -> Embedder:
    """Return the process-wide embedder for ``settings`` (loaded lazily, thread-safe).

    Args:
        settings: Which backend, model and variant to use.

    Returns:
        An `OnnxEmbedder` for the ``local`` backend, else an `OpenAIEmbedder`.
    """
    if settings.backend == "local":
        # Batches of 32 embed as fast per chunk as 64 but need half the working
        # memory, and onnxruntime's arena keeps its high-water mark.
        return OnnxEmbedder(variant=settings.variant, batch_size=min(settings.batch_size, 32))
    return OpenAIEmbedder(
        model=settings.model,
        base_url=settings.base_url,
        api_key=settings.api_key,
        batch_size=settings.batch_size,
    )


def make_openai_client(
    *,
    base_url: str,
    api_key: str,
    timeout: float,
    max_retries: int,
    http_client: httpx2.Client | None = None,
) -> openai_api.OpenAI:
    """Return an OpenAI client; a server at ``base_url`` may need no key.

    Raises:
        EmbeddingError: Neither a key nor a base URL is configured.
    """
    from assistant import openai_api

    client = None
    if api_key or base_url:
        client = openai_api.make_client(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            http_client=http_client,
        )
    if client is None:
        raise EmbeddingError(
            "the openai embedding backend needs ASSISTANT_EMBEDDING_API_KEY (or OPENAI_API_KEY) "
            "or ASSISTANT_EMBEDDING_BASE_URL"
        )
    return client


class OpenAIEmbedder:
    """An `Embedder` backed by an OpenAI-compatible ``/v1/embeddings`` endpoint.

    Args:
        model: The embedding model name the server knows.
        base_url: The server's ``/v1`` URL; empty means api.openai.com.
        api_key: Its key (may be empty with a ``base_url``).
        batch_size: Inputs per request.
        timeout: Seconds per request.
        max_retries: Retries of 429/5xx and connection errors, by the client.
        dimensions: Ask for vectors of this length; ``None`` takes the model's own,
            learnt from the first response.
        http_client: An httpx2 client to send requests through (tests, proxies).
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "",
        api_key: str = "",
        batch_size: int = 64,
        timeout: float = 30.0,
        max_retries: int = 2,
        dimensions: int | None = None,
        http_client: httpx2.Client | None = None,
    ) -> None:
        if batch_size < 1:
            raise EmbeddingError(f"batch size must be positive, got {batch_size}")
        self.model = model
        self.batch_size = batch_size
        self._requested_dimensions = dimensions
        self._dimensions = dimensions
        self._base_url = base_url
        self._client = make_openai_client(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            http_client=http_client,
        )
        self._lock = threading.Lock()

    @property
    def identity(self) -> str:
        """Return ``openai:<model>`` (with ``:<dimensions>`` when shortened)."""
        suffix = f":{self._requested_dimensions}" if self._requested_dimensions else ""
        return f"openai:{self.model}{suffix}"

    @property
    def dimension(self) -> int:
        """Return the vector length, asking the server once if it is not known yet."""
        if self._dimensions is None:
            self.embed(["dimension probe"])
        if self._dimensions is None:  # pragma: no cover - embed() sets it or raises
            raise EmbeddingError(f"model {self.model!r} returned no vectors")
        return self._dimensions

    @property
    def max_input_tokens(self) -> int:
        """Return 8191, the limit of OpenAI's embedding models."""
        return OPENAI_MAX_INPUT_TOKENS

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Return each text's length in cl100k_base tokens (OpenAI's embedding encoding)."""
        tokenizer = get_tokenizer(DEFAULT_ENCODING)
        return [tokenizer.count(text) for text in texts]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Return one L2-normalised row per text, in input order.

        Raises:
            EmbeddingError: The server failed, is unreachable, or answered oddly.
        """
        parts = [
            self._request(list(texts[start : start + self.batch_size]))
            for start in range(0, len(texts), self.batch_size)
        ]
        if not parts:
            return np.zeros((0, self._dimensions or 0), dtype=np.float32)
        vectors = np.vstack(parts)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit

    def _request(self, batch: list[str]) -> npt.NDArray[np.float32]:
        from assistant import openai_api

        # The API rejects empty strings; a space embeds as "nothing" just as well.
        inputs = [text or " " for text in batch]
        try:
            response = self._client.embeddings.create(
                model=self.model,
                input=inputs,
                encoding_format="float",
                dimensions=self._requested_dimensions or openai_api.omit,
            )
        except openai_api.APIStatusError as exc:
            raise EmbeddingError(
                f"embedding request failed: HTTP {exc.status_code} from model {self.model!r}"
            ) from exc
        except openai_api.APIConnectionError as exc:
            where = self._base_url or "api.openai.com"
            raise EmbeddingError(f"cannot reach the embedding server at {where}: {exc}") from exc
        except openai_api.OpenAIError as exc:
            raise EmbeddingError(
                f"embedding request failed for model {self.model!r}: {exc}"
            ) from exc
        rows = sorted(response.data, key=lambda item: item.index)
        if len(rows) != len(batch):
            raise EmbeddingError(
                f"embedding server returned {len(rows)} vectors for {len(batch)} inputs "
                f"(model {self.model!r})"
            )
        vectors = np.asarray([row.embedding for row in rows], dtype=np.float32)
        self._check_dimension(vectors.shape[1])
        logger.debug("embedded %s texts with %s", len(batch), self.model)
        return vectors

    def _check_dimension(self, width: int) -> None:
        with self._lock:
            if self._dimensions is None:
                self._dimensions = width
            elif width != self._dimensions:
                raise EmbeddingError(
                    f"model {self.model!r} returned {width}-dimensional vectors, "
                    f"expected {self._dimensions}"
                )
