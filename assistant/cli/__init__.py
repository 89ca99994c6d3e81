"""Stage 9, the command lines: `ingest`, `search` (and ``ask``), `evaluate` and `serve`."""

from assistant.cli.ingest import ingest_main

__all__ = ["ingest_main"]
