"""The OpenAI SDK, for the embedder and the chat model: the only module that imports ``openai``.

Both talk to OpenAI or any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio)
through one client factory; the SDK's exception classes are re-exported from here so that
each caller translates them into its own error of `assistant.errors`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import openai
from openai import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    OpenAI,
    OpenAIError,
    RateLimitError,
    omit,
)
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionMessageParam,
    ChatCompletionSystemMessageParam,
    ChatCompletionUserMessageParam,
)

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "ChatCompletionAssistantMessageParam",
    "ChatCompletionMessageParam",
    "ChatCompletionSystemMessageParam",
    "ChatCompletionUserMessageParam",
    "NotFoundError",
    "OpenAI",
    "OpenAIError",
    "RateLimitError",
    "make_client",
    "omit",
]

# Local servers (Ollama, llama.cpp, vLLM) ignore the key, but the client insists on one.
_PLACEHOLDER_KEY = "not-needed"


def make_client(
    *,
    base_url: str,
    api_key: str,
    timeout: float,
    max_retries: int,
    http_client: httpx2.Client | None = None,
) -> OpenAI | None:
    """Return a client for ``base_url`` (empty: api.openai.com), or None without any key.

    A server at ``base_url`` may need no key; for api.openai.com the SDK falls back to
    ``OPENAI_API_KEY`` and None means that is unset too.
    """
    key = api_key or (_PLACEHOLDER_KEY if base_url else None)
    try:
        return openai.OpenAI(
            api_key=key,
            base_url=base_url or None,
            timeout=timeout,
            max_retries=max_retries,
            http_client=http_client,
        )
    except openai.OpenAIError:
        return None
