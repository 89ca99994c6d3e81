"""Stage 3, text -> vectors: the packaged local ONNX model or an OpenAI-compatible server.

`factory.make_embedder` picks one from the settings; `local` runs the packaged model and
`model_files` finds, verifies and derives its files.
"""

from assistant.embeddings.factory import (
    OnnxEmbedder,
    OpenAIEmbedder,
    make_embedder,
    make_openai_client,
)

__all__ = ["OnnxEmbedder", "OpenAIEmbedder", "make_embedder", "make_openai_client"]
