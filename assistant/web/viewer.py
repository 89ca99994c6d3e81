"""A read-only HTML view of an indexed source document, one anchor per section.

The chat's source links point at ``/doc/<source>#<anchor>``. This module turns
such a path into a page: it resolves the path strictly inside the indexed
roots (no ``..``, absolute paths, hidden files, symlink escapes or the index
directory), loads the file with the same loader the ingest uses, and renders
each `Section` in a ``<section id="anchor">`` so the anchors always match the
ones stored on chunks. Markdown is rendered with raw HTML disabled (escaped);
every other kind is shown as preformatted text. Pages carry a strict
Content-Security-Policy, so even a hostile document cannot run script or load
anything.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from assistant.documents.markdown import render_html
from assistant.errors import AssistantError, DocumentError
from assistant.types import ANONYMOUS, Document, Section, User

__all__ = ["CSP", "SECURITY_HEADERS", "DocumentViewer", "ViewerPage"]

logger = logging.getLogger(__name__)

CSP = "default-src 'none'; style-src 'unsafe-inline'"
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;"
    "line-height:1.5}section{border-left:3px solid transparent;padding-left:.75rem}"
    "section:target{border-left-color:#f59e0b;background:#fffbeb}"
    "pre{white-space:pre-wrap}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
    "padding:.25rem .5rem}.meta{color:#555}"
)

Loader = Callable[[Path, Path, str], Document]
# The sources ``user`` may read, each mapped to the root it was ingested from.
SourceCatalog = Callable[[User], Mapping[str, str]]


@dataclass(frozen=True, slots=True)
class ViewerPage:
    """An HTTP answer of the viewer: status code and a complete HTML page."""

    status: int
    html: str


def _load_with_documents(path: Path, root: Path, source: str) -> Document:
    from assistant.documents.loading import load_document

    return load_document(path, root=root, source=source)


class DocumentViewer:
    """Serves indexed documents as HTML, only from the given roots."""

    def __init__(
        self,
        *,
        roots: Sequence[Path],
        blocked: Sequence[Path] = (),
        loader: Loader = _load_with_documents,
        catalog: SourceCatalog | None = None,
    ) -> None:
        """Create a viewer.

        Args:
            roots: Directories whose files may be shown when there is no catalog.
            blocked: Directories never shown even if under a root (the index).
            loader: Turns ``(path, root, source)`` into a `Document`.
            catalog: Returns the indexed sources a user may read, each mapped to the
                root it was ingested from; when given, only those sources are shown.
                When it raises `AssistantError` (no index was ever loaded) nothing
                is shown: the roots never stand in for the catalog (finding D8).
        """
        self._roots = tuple(root.resolve() for root in roots)
        self._blocked = tuple(path.resolve() for path in blocked)
        self._loader = loader
        self._catalog = catalog

    def page(self, path: str, *, user: User = ANONYMOUS) -> ViewerPage:
        """Return the page for a request path such as ``hr/leave.md``, as ``user`` sees it.

        Unsafe, unknown and forbidden paths give the same 404 page, which does not
        reveal why, and files the loader rejects give a 422 page naming the problem.
        """
        found = self._resolve(path, user)
        if found is None:
            logger.info("viewer refused path %r", path)
            body = "<h1>Not found</h1><p>No such indexed document.</p>"
            return ViewerPage(404, _page("Not found", body))
        file, root, source = found
        try:
            document = self._loader(file, root, source)
        except DocumentError as exc:
            logger.warning("viewer cannot load %s: %s", source, exc.reason)
            body = f"<h1>Cannot show document</h1><p>{html.escape(str(exc))}</p>"
            return ViewerPage(422, _page("Cannot show document", body))
        return ViewerPage(200, render_document(document))

    def _readable(self, user: User) -> Mapping[str, str] | None:
        """Return the catalog for ``user`` (None: no catalog, the roots apply)."""
        if self._catalog is None:
            return None
        try:
            return self._catalog(user)
        except AssistantError as exc:
            logger.info("viewer has no catalog (%s): showing nothing", exc)
            return {}

    def _resolve(self, path: str, user: User) -> tuple[Path, Path, str] | None:
        readable = self._readable(user)
        # ":" and "\" are ordinary in POSIX file names ("HR: leave policy.md") and
        # such files are indexed and linked; the catalog vouches for those names.
        indexed = readable is not None and path in readable
        relative = _safe_relative(path, any_name=indexed)
        if relative is None:
            return None
        if readable is None:
            roots = self._roots
        else:
            indexed_root = readable.get(relative.as_posix())
            roots = (Path(indexed_root).resolve(),) if indexed_root else ()
        for root in roots:
            candidate = root.joinpath(*relative.parts)
            try:
                real = candidate.resolve(strict=True)
            except (OSError, RuntimeError):
                continue
            if not real.is_file() or not real.is_relative_to(root):
                continue
            if any(real.is_relative_to(blocked) for blocked in self._blocked):
                continue
            if any(part.startswith(".") for part in real.relative_to(root).parts):
                continue
            return candidate, root, relative.as_posix()
        return None


def _safe_relative(path: str, *, any_name: bool = False) -> PurePosixPath | None:
    """Return ``path`` as a relative path free of traversal, or None.

    Without ``any_name`` (a source the catalog does not list) names with a colon or
    a backslash are refused too, as a drive letter or a Windows separator could mean.
    """
    if not path or "\x00" in path or path.startswith("/"):
        return None
    if not any_name and ("\\" in path or ":" in path):
        return None
    relative = PurePosixPath(path)
    if relative.is_absolute() or not relative.parts:
        return None
    if any(part in ("", ".", "..") or part.startswith(".") for part in relative.parts):
        return None
    return relative


def render_document(document: Document) -> str:
    """Render a document as a standalone HTML page with one anchor per section."""
    meta = document.meta
    facts = [f"source: {document.source}"]
    where = f" (from {meta.date_source})" if meta.date_source else ""
    if meta.effective_date:
        facts.append(f"effective {meta.effective_date}{where}")
    elif meta.updated_date:
        facts.append(f"updated {meta.updated_date}{where}")
    if meta.version:
        facts.append(f"version {meta.version}")
    header = f'<p class="meta">{html.escape(" · ".join(facts))}</p>'
    if document.kind != "markdown":
        header = f"<h1>{html.escape(meta.title or document.source)}</h1>\n{header}"
    body = "\n".join(_section_html(document, section) for section in document.sections)
    return _page(meta.title or document.source, header + body)


def _section_html(document: Document, section: Section) -> str:
    text = document.text[section.char_start : section.char_end]
    anchor = f' id="{html.escape(section.anchor, quote=True)}"' if section.anchor else ""
    if document.kind == "markdown":
        inner = render_html(text)
    else:
        level = min(max(section.level, 1), 6)
        heading = html.escape(section.heading_path[-1]) if section.heading_path else ""
        page = f' <small class="meta">page {section.page}</small>' if section.page else ""
        inner = f"<h{level}>{heading}{page}</h{level}>\n<pre>{html.escape(text)}</pre>"
    return f"<section{anchor}>\n{inner}\n</section>"


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html>\n<html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body>\n{body}\n</body></html>"
    )
