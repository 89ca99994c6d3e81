"""Format-specific loaders that turn one file's content into text, metadata and sections.

Each loader returns an `Extracted` value; `assistant.documents` reads the file,
picks the loader by suffix and wraps the result into a `Document`. Loaders
import their vendor library themselves, so importing this package is cheap.
"""

from assistant.loaders.base import Extracted, fallback_title, slugify

__all__ = ["Extracted", "fallback_title", "slugify"]
