"""Stage 4, `Chunk` + vector <-> Chroma: ingest, its plan and lock, and the snapshot reader.

`chroma` is the only module that talks to Chroma; `codec` flattens chunks into its metadata;
`ingest` runs a whole ingest under `lock` following `plan`; `files` owns the index's own
files (the generation file); `reader` keeps an in-memory snapshot current for searchers.
"""
