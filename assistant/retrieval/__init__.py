"""Stage 5, question -> `SearchResult`: hybrid dense + BM25 search over a snapshot.

`retriever.Retriever` runs the search steps; `view` holds what a search needs from one
snapshot generation; `lexical` owns bm25s; `fusion` combines the rankings; `expansion`
rebuilds sections; `nomatch` decides "no good match"; `factory` wires the stack from
settings; `evaluation` scores retrieval against a question set.
"""
