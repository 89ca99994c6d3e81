"""Stage 2, `Document` -> `Chunk`: heading-aware chunks under a token budget, with overlap.

`chunker` is the entry point; `units` turns blocks into the spans the packer never splits,
`packing` fills chunks with them, and `splitting` cuts an over-long span into pieces.
"""

from assistant.chunking.chunker import chunk_document

__all__ = ["chunk_document"]
