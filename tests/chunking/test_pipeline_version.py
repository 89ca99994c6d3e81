"""PIPELINE_VERSION moves exactly when the chunks of the sample policies change.

Stored documents are re-chunked only when their key changes, and the key
includes PIPELINE_VERSION. A change to loading or chunking that forgets the
bump leaves old-shaped chunks in every existing index; a bump without a change
re-embeds every document for nothing. This test catches both.

The documents are the sample policies plus `tests/support/fixtures/pipeline/` (edge
cases the samples lack: a late setext H1, text of many word pieces per token,
a file with only front matter), chunked as the ingest chunks them, i.e. within
the packaged embedder's window.
"""

from __future__ import annotations

import hashlib
import json
import os

from assistant.chunking.chunker import chunk_document
from assistant.config import ChunkingSettings
from assistant.documents.loading import discover, load_document
from assistant.embeddings.local import OnnxEmbedder
from assistant.errors import EmptyDocumentError
from assistant.index.ingest import PIPELINE_VERSION, embedder_window
from assistant.tokens import get_tokenizer
from tests.support.paths import FIXTURES, GOLDEN, ROOT

POLICIES = ROOT / "data" / "policies"
EDGE_CASES = FIXTURES / "pipeline"
GOLDEN = GOLDEN / "pipeline_fingerprint.json"


def fingerprint() -> str:
    """Hash everything a stored chunk is made of, for every sample policy."""
    settings = ChunkingSettings()
    tokenizer = get_tokenizer(settings.encoding)
    window = embedder_window(OnnxEmbedder())
    digest = hashlib.sha256()
    for root, path in sorted(discover([POLICIES, EDGE_CASES]), key=lambda pair: pair[1]):
        try:
            doc = load_document(path, root=root)
        except EmptyDocumentError as exc:
            digest.update(json.dumps([exc.source, "skipped"]).encode("utf-8"))
            continue
        for chunk in chunk_document(doc, settings=settings, tokenizer=tokenizer, window=window):
            fields = [
                chunk.chunk_id,
                chunk.text,
                list(chunk.heading_path),
                chunk.anchor,
                chunk.page,
                [chunk.char_start, chunk.char_end, chunk.start_line, chunk.end_line],
                [chunk.section_start, chunk.section_end, chunk.token_count],
                chunk.kind,
                chunk.prefix,
            ]
            digest.update(json.dumps(fields, ensure_ascii=False).encode("utf-8"))
        digest.update(json.dumps([doc.source, doc.meta.title, doc.meta.tags]).encode("utf-8"))
    return digest.hexdigest()


def test_pipeline_version_is_bumped_exactly_when_chunks_change() -> None:
    current = {"pipeline_version": PIPELINE_VERSION, "fingerprint": fingerprint()}
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(current, indent=2) + "\n", encoding="utf-8")
    recorded = json.loads(GOLDEN.read_text(encoding="utf-8"))
    chunks_changed = current["fingerprint"] != recorded["fingerprint"]
    version_changed = current["pipeline_version"] != recorded["pipeline_version"]
    assert not (chunks_changed and not version_changed), (
        f"the chunks of data/policies changed but PIPELINE_VERSION is still "
        f"{PIPELINE_VERSION!r}: bump it in assistant/index/ingest.py so existing indexes are "
        "re-chunked, then record the new fingerprint with UPDATE_GOLDEN=1"
    )
    assert not (version_changed and not chunks_changed), (
        f"PIPELINE_VERSION changed to {PIPELINE_VERSION!r} but no chunk of data/policies did: "
        "every index would re-embed everything for nothing (or add a sample that shows the change)"
    )
    assert current == recorded, "record the new fingerprint with UPDATE_GOLDEN=1"
