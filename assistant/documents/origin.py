"""Where documents came from: titles, links and audiences given beside the files.

A folder filled by a connector (``python -m assistant sync sharepoint``) holds
files named by the remote item, not by what a reader calls them, and the remote
system decides who may read each one. The connector writes ``.sources.json`` in
the folder it hands to the ingest::

    {"drive/01ABC.pdf": {"title": "Travel policy", "url": "https://...",
                          "audience": ["hr", "ann@example.com"]}}

An entry's ``audience`` wins over front matter and the access file: the system
the file came from decides who reads it. Its ``title`` is used only when the
document names none itself, and its ``url`` when the document gives none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from assistant.documents.access import AccessRuleError, parse_groups
from assistant.documents.base import fallback_title
from assistant.types import MAX_TITLE_CHARS, Document, shorten_heading

__all__ = ["SOURCES_FILE", "Origin", "read_origins", "with_origin"]

SOURCES_FILE = ".sources.json"
_MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Origin:
    """What the system a file came from says about it."""

    title: str = ""
    url: str = ""
    audience: tuple[str, ...] | None = None

    def signature(self) -> str:
        """Return the part of the document key these fields make (a change re-ingests)."""
        groups = "*" if self.audience is None else ",".join(self.audience)
        return json.dumps([self.title, self.url, groups], ensure_ascii=True)


def read_origins(root: Path) -> dict[str, Origin]:
    """Return the entries of ``root``'s sources file by source ({} without one).

    Raises:
        AccessRuleError: The file cannot be read or an entry is malformed; the
            ingest then stores nothing from ``root`` (fail closed, as for audiences).
    """
    path = root / SOURCES_FILE if root.is_dir() else root.parent / SOURCES_FILE
    if not path.is_file():
        return {}
    try:
        if path.stat().st_size > _MAX_BYTES:
            raise AccessRuleError(str(path), "sources file is larger than 64 MB")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AccessRuleError(str(path), f"cannot read sources file: {exc}") from exc
    if not isinstance(data, dict):
        raise AccessRuleError(str(path), "a sources file is an object keyed by source")
    return {
        str(source): _origin(entry, source=str(source), file=path) for source, entry in data.items()
    }


def _origin(entry: object, *, source: str, file: Path) -> Origin:
    if not isinstance(entry, dict):
        raise AccessRuleError(str(file), f"{source!r}: an entry is an object")
    audience = entry.get("audience")
    groups = None
    if audience is not None:
        groups = parse_groups(audience, where=f"{file.name} {source!r}", source=str(file))
    return Origin(title=str(entry.get("title", "")), url=str(entry.get("url", "")), audience=groups)


def with_origin(document: Document, origin: Origin | None, *, stem: str) -> Document:
    """Return ``document`` with ``origin``'s title, link and audience applied.

    Args:
        document: As parsed.
        origin: Its entry in the sources file, if any.
        stem: The file name's stem, whose fallback title a given title replaces.
    """
    if origin is None:
        return document
    meta = document.meta
    title = meta.title
    if origin.title and (not title or title == fallback_title(stem)):
        title = shorten_heading(origin.title, MAX_TITLE_CHARS)
    url = meta.url or origin.url
    audience = origin.audience if origin.audience is not None else meta.audience
    return replace(document, meta=replace(meta, title=title, url=url, audience=audience))
