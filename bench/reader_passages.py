"""Dump the passages of each training corpus, chunked exactly as the ingest does.

Each corpus is read with the project's own loader (``load_document``) and cut
with ``chunk_document`` under the default `ChunkingSettings` and the packaged
embedder's token window (see `assistant.index.ingest.embedder_window`), so the
passages the reader is trained on are the ones it will score at run time.
Output: one JSONL file per corpus, ``bench/out/passages-<corpus>.jsonl``, one
object a line: ``chunk_id``, ``corpus``, ``file`` (relative to the corpus
root), ``heading_path`` (a list), ``text`` (what is embedded and shown).

Usage, from the repository root::

    PYTHONPATH=$PWD .venv/bin/python bench/reader_passages.py [CORPUS ...]
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Iterator
from pathlib import Path

from assistant.chunking.chunker import chunk_document
from assistant.config import Settings
from assistant.documents.loading import SUPPORTED_SUFFIXES, discover, load_document
from assistant.embeddings.local import OnnxEmbedder
from assistant.errors import DocumentError
from assistant.index.ingest import embedder_window
from assistant.tokens import get_tokenizer
from assistant.types import TokenWindow

__all__ = ["CORPORA", "OUT", "passages"]

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
CORPORA: dict[str, Path] = {
    "sample": ROOT / "data" / "policies",
    "github": ROOT / "data" / "corpora" / "github-site-policy" / "Policies",
    "sourcegraph": ROOT / "data" / "corpora" / "sourcegraph-handbook" / "content",
    "gitlab": ROOT / "data" / "corpora" / "gitlab-handbook" / "handbook",
    "gitlab-extra": ROOT / "data" / "training" / "corpora" / "gitlab-extra",
}


def passages(corpus: str, root: Path, window: TokenWindow) -> Iterator[dict[str, object]]:
    """Yield one record per chunk of every supported file under ``root``."""
    settings = Settings().chunking
    tokenizer = get_tokenizer(settings.encoding)
    for base, path in discover([root]):
        if path.suffix.lower() not in SUPPORTED_SUFFIXES:
            continue
        source = path.relative_to(base).as_posix()
        try:
            doc = load_document(path, root=base, source=source)
        except DocumentError as exc:  # the ingest skips these files too
            logger.info("skipping %s: %s", source, exc.reason)
            continue
        for chunk in chunk_document(doc, settings=settings, tokenizer=tokenizer, window=window):
            yield {
                "chunk_id": chunk.chunk_id,
                "corpus": corpus,
                "file": source,
                "heading_path": list(chunk.heading_path),
                "text": chunk.text,
            }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="*", metavar="CORPUS", help=f"any of {sorted(CORPORA)}")
    args = parser.parse_args()
    unknown = set(args.corpora) - set(CORPORA)
    if unknown:
        parser.error(f"unknown corpus: {sorted(unknown)}")
    window = embedder_window(OnnxEmbedder())
    OUT.mkdir(parents=True, exist_ok=True)
    for corpus in args.corpora or sorted(CORPORA):
        root = CORPORA[corpus]
        if not root.is_dir():
            logger.warning("no folder for %s: %s", corpus, root)
            continue
        target = OUT / f"passages-{corpus}.jsonl"
        with target.open("w", encoding="utf-8") as out:
            count = 0
            for record in passages(corpus, root, window):
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
        print(f"{corpus}: {count} passages -> {target.relative_to(ROOT)}")


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    main()
