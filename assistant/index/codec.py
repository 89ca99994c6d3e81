"""Flatten chunks into store metadata and back.

Chroma metadata values must be str, int, float or bool: no None, lists or
nested values. Tuples (heading paths, tags) are stored as JSON strings, and a
readable " > "-joined copy of the heading path sits beside them for people
browsing the collection.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

from assistant.types import ADMIN_GROUP, Chunk, DocMeta, Document, compose_chunk_text

__all__ = [
    "ADMIN_ONLY",
    "ChunkRecord",
    "MetadataValue",
    "decode_audience",
    "decode_chunk",
    "decode_doc_meta",
    "encode_chunk",
]

# What a chunk whose stored audience cannot be read is restricted to (fail closed).
ADMIN_ONLY = (ADMIN_GROUP,)

MetadataValue = str | int | float | bool


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """One row as stored: id, the embedded text and flat metadata."""

    chunk_id: str
    text: str
    metadata: dict[str, MetadataValue]


def text_sha256(text: str) -> str:
    """Return the hex sha256 of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def encode_chunk(
    chunk: Chunk,
    *,
    doc: Document,
    doc_key: str,
    chunk_count: int,
    indexed_at: str,
) -> ChunkRecord:
    """Return the stored form of ``chunk``, carrying its document's metadata too."""
    meta = doc.meta
    metadata: dict[str, MetadataValue] = {
        "source": chunk.source,
        "root": doc.root,
        "doc_kind": doc.kind,
        "title": meta.title,
        "heading_path": chunk.breadcrumb,
        "heading_path_json": json.dumps(list(chunk.heading_path), ensure_ascii=False),
        "anchor": chunk.anchor,
        "page": chunk.page,
        "ordinal": chunk.ordinal,
        "chunk_count": chunk_count,
        "char_start": chunk.char_start,
        "char_end": chunk.char_end,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "section_start": chunk.section_start,
        "section_end": chunk.section_end,
        "token_count": chunk.token_count,
        "kind": chunk.kind,
        "oversize": chunk.oversize,
        "prefix": chunk.prefix,
        "chunk_sha256": text_sha256(chunk.text),
        "doc_sha256": doc.sha256,
        "doc_key": doc_key,
        "effective_date": meta.effective_date,
        "updated_date": meta.updated_date,
        "date_source": meta.date_source,
        "version": meta.version,
        "owner": meta.owner,
        "url": meta.url,
        "supersedes": meta.supersedes,
        "tags": ",".join(meta.tags),
        "tags_json": json.dumps(list(meta.tags), ensure_ascii=False),
        "audience_json": json.dumps(list(meta.audience or ()), ensure_ascii=False),
        "indexed_at": indexed_at,
    }
    return ChunkRecord(chunk.chunk_id, chunk.text, metadata)


def decode_chunk(chunk_id: str, text: str, metadata: Mapping[str, MetadataValue]) -> Chunk:
    """Rebuild a `Chunk` from its stored form (the inverse of `encode_chunk`)."""
    heading_path = tuple(json.loads(str(metadata["heading_path_json"])))
    prefix = str(metadata.get("prefix", ""))
    header = compose_chunk_text(heading_path, prefix, "")
    body = text[len(header) :] if text.startswith(header) else text
    kind = str(metadata.get("kind", "paragraph"))
    return Chunk(
        chunk_id=chunk_id,
        source=str(metadata["source"]),
        ordinal=int(metadata["ordinal"]),
        heading_path=heading_path,
        anchor=str(metadata.get("anchor", "")),
        text=text,
        body=body,
        prefix=prefix,
        char_start=int(metadata["char_start"]),
        char_end=int(metadata["char_end"]),
        start_line=int(metadata["start_line"]),
        end_line=int(metadata["end_line"]),
        section_start=int(metadata["section_start"]),
        section_end=int(metadata["section_end"]),
        page=int(metadata.get("page", 0)),
        token_count=int(metadata["token_count"]),
        kind=kind,  # type: ignore[arg-type]
        oversize=bool(metadata.get("oversize", False)),
    )


def decode_doc_meta(metadata: Mapping[str, MetadataValue]) -> DocMeta:
    """Rebuild the document metadata that every stored chunk carries."""
    return DocMeta(
        title=str(metadata.get("title", "")),
        effective_date=str(metadata.get("effective_date", "")),
        updated_date=str(metadata.get("updated_date", "")),
        version=str(metadata.get("version", "")),
        owner=str(metadata.get("owner", "")),
        tags=tuple(json.loads(str(metadata.get("tags_json", "[]")))),
        url=str(metadata.get("url", "")),
        supersedes=str(metadata.get("supersedes", "")),
        date_source=str(metadata.get("date_source", "")),
        audience=decode_audience(metadata),
    )


def decode_audience(metadata: Mapping[str, MetadataValue]) -> tuple[str, ...]:
    """Return the groups that may read a stored chunk; `ADMIN_ONLY` when unreadable.

    A row without the field was written before audiences existed (every document
    was public then), so it reads as everyone; anything present but not a list of
    non-empty strings fails closed.
    """
    raw = metadata.get("audience_json")
    if raw is None:
        return ()
    try:
        value = json.loads(str(raw))
    except ValueError:
        return ADMIN_ONLY
    if not isinstance(value, list) or not all(isinstance(g, str) and g for g in value):
        return ADMIN_ONLY
    return tuple(value)
