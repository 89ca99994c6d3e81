"""Stage 1, file -> `Document`: find input files and load each one, one module per format.

`loading` finds files and picks the loader by suffix (its ``_KINDS`` table); each format
module (`markdown`, `text`, `html`, `pdf`, `docx`) imports its own parsing library and
returns an `Extracted` (`base`). A new format is one new module and one row in that table.
"""

from assistant.documents.loading import (
    MAX_FILE_BYTES,
    SUPPORTED_SUFFIXES,
    check_file,
    discover,
    load_document,
)

__all__ = ["MAX_FILE_BYTES", "SUPPORTED_SUFFIXES", "check_file", "discover", "load_document"]
