"""Answers questions about an organisation's policy documents, with citations.

Importing this package is cheap: it loads no model, reads no environment and
touches no disk. Heavy modules are imported where they are used.
"""

from assistant.config import Settings
from assistant.errors import (
    AssistantError,
    ConfigError,
    DocumentError,
    EmbeddingError,
    IndexBusyError,
    IndexMismatchError,
    IndexNotFoundError,
    LLMError,
    StoreError,
    TokenizerError,
)
from assistant.types import (
    Answer,
    Block,
    Chunk,
    Citation,
    DocMeta,
    Document,
    Hit,
    Problem,
    SearchFilters,
    SearchResult,
    Section,
    Turn,
)

__all__ = [
    "Answer",
    "AssistantError",
    "Block",
    "Chunk",
    "Citation",
    "ConfigError",
    "DocMeta",
    "Document",
    "DocumentError",
    "EmbeddingError",
    "Hit",
    "IndexBusyError",
    "IndexMismatchError",
    "IndexNotFoundError",
    "LLMError",
    "Problem",
    "SearchFilters",
    "SearchResult",
    "Section",
    "Settings",
    "StoreError",
    "TokenizerError",
    "Turn",
]
