"""The one exception tree of the assistant.

Everything the library raises on purpose derives from `AssistantError`, so the
entry points (``ingest.py``, ``python -m assistant``, ``ui.py``) can translate it
into an exit code or a short UI message in one place::

    AssistantError
    ├── ConfigError            bad settings or flags (names the setting and value)
    ├── DocumentError          one input file cannot be read or parsed (names the file)
    │   └── EmptyDocumentError a file that holds no text (an ingest skips it, not a failure)
    ├── IndexNotFoundError     no index at the configured place: run `python ingest.py` first
    ├── IndexMismatchError     the index was built with another embedding model
    ├── IndexBusyError         another ingest holds the writer lock
    ├── StoreError             the vector store failed (disk full, server down, ...)
    ├── EmbeddingError         the embedding model failed or could not be loaded
    ├── TokenizerError         the tiktoken encoding could not be loaded offline
    ├── LLMError               the chat model failed (wraps the openai client's errors)
    ├── SyncError              a document source (SharePoint through Graph) failed: sign-in, network
    └── RequestError           an API request is malformed (the API answers 400 with its code)
"""

from __future__ import annotations

__all__ = [
    "AssistantError",
    "ConfigError",
    "DocumentError",
    "EmbeddingError",
    "EmptyDocumentError",
    "IndexBusyError",
    "IndexMismatchError",
    "IndexNotFoundError",
    "LLMError",
    "RequestError",
    "StoreError",
    "SyncError",
    "TokenizerError",
]


class AssistantError(Exception):
    """Base class of every error the assistant raises on purpose."""


class ConfigError(AssistantError):
    """A setting, flag or environment variable has an invalid value."""


class DocumentError(AssistantError):
    """One input document cannot be read or parsed.

    Attributes:
        source: The document's path as the user gave it (relative to its root).
        reason: A short human-readable reason, without the path.
    """

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


class EmptyDocumentError(DocumentError):
    """A file holds no text to index: blank, or only YAML front matter (a redirect page).

    Not a fault of the file, so an ingest reports it as *skipped*, not failed.
    """


class IndexNotFoundError(AssistantError):
    """No index exists at the configured location."""


class IndexMismatchError(AssistantError):
    """The index was built with a different embedding model or dimension."""


class IndexBusyError(AssistantError):
    """Another process is writing to the same index."""


class StoreError(AssistantError):
    """The vector store failed (I/O error, disk full, server unreachable)."""


class EmbeddingError(AssistantError):
    """The embedding model could not be loaded or failed on a batch."""


class TokenizerError(AssistantError):
    """The tiktoken encoding could not be loaded without network access."""


class LLMError(AssistantError):
    """The chat model failed; the message is safe to show to a user."""


class SyncError(AssistantError):
    """Syncing from a document source failed; what was committed before stays valid."""


class RequestError(AssistantError):
    """An API request is malformed; the message is safe to send back to the client.

    Attributes:
        code: A short machine-readable reason, e.g. ``invalid_messages``.
        param: The request field at fault, or "".
    """

    def __init__(self, message: str, *, code: str, param: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.param = param
