"""A read-only HTML view of an indexed source document, one anchor per section.

The chat's source links point at ``/doc/<source>#<anchor>``. This module turns
such a path into a page: it resolves the path strictly inside the indexed
roots (no ``..``, absolute paths, hidden files, symlink escapes or the index
directory), loads the file with the same loader the ingest uses, and renders
each `Section` in a ``<section id="anchor">`` so the anchors always match the
ones stored on chunks. Markdown is rendered with raw HTML disabled (escaped);
every other kind is shown as preformatted text. Pages carry a strict
Content-Security-Policy (only the page's own script runs, allowed by its hash), so
even a hostile document cannot run script or load anything.
"""

from __future__ import annotations

import base64
import hashlib
import html
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from assistant.documents.markdown import render_html
from assistant.errors import AssistantError, DocumentError
from assistant.session import may_open_now
from assistant.session import plain_text as _plain
from assistant.types import ANONYMOUS, Document, Section, User
from assistant.web.marking import mark_passage

__all__ = ["CSP", "SECURITY_HEADERS", "DocumentViewer", "ViewerPage"]

logger = logging.getLogger(__name__)

# The page's one script (allowed by its hash, nothing else runs): "Back to the chat"
# closes a viewer opened in a tab of its own, so the reader is back in the chat's tab
# (a new chat only when the tab cannot close); on load, the cited passage's section
# heading is scrolled to just under the sticky breadcrumb when both fit on the screen.
_SCRIPT = (
    "document.addEventListener('click',function(e){var a=e.target.closest&&"
    "e.target.closest('a.back');if(!a||history.length>1)return;e.preventDefault();"
    "window.close();setTimeout(function(){location.href=a.href},400)});"
    "window.addEventListener('load',function(){var m=document.getElementById('cited');"
    "var s=m&&m.closest('section');var h=s&&s.querySelector('h1,h2,h3,h4,h5,h6');"
    "var c=document.querySelector('.crumbs');if(!h||!c)return;"
    "var top=h.getBoundingClientRect().top+scrollY-c.offsetHeight-8;"
    "var bottom=m.getBoundingClientRect().bottom+scrollY;"
    "if(bottom-top<=innerHeight)scrollTo(0,top)});"
)
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
CSP = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_SCRIPT_HASH}'"
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
    "section.cited{border-left-color:#f59e0b;background:#fffbeb}mark{background:#fde68a}"
    ".crumbs{position:sticky;top:0;background:#fff;padding:.5rem 0;border-bottom:1px solid #ddd;"
    "display:flex;gap:1rem;flex-wrap:wrap;font-size:.9rem}.crumbs span{color:#555}"
    "[id]{scroll-margin-top:4rem}mark[id]{scroll-margin-top:7rem}"
    "pre{white-space:pre-wrap}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
    "padding:.25rem .5rem}.meta{color:#555}"
    # Nothing wider than a phone: long words wrap, wide tables scroll in their own box.
    "body{overflow-wrap:break-word}table{display:block;max-width:100%;overflow-x:auto}"
)

MAX_PASSAGE = 400
SHORT_LINE = 60
_LIST_MARK = re.compile(r"^\s*(?:[-+*•]|\d+[.)])\s+")
_SEPARATOR_ROW = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
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
    from assistant.documents.sandbox import shared_sandbox

    # The ingest's time and memory budget: a hostile file is a 422 page, never a 500
    # or a server out of memory (issue 28, D13 and D14).
    return load_document(path, root=root, source=source, sandbox=shared_sandbox())


class DocumentViewer:
    """Serves indexed documents as HTML, only from the given roots."""

    def __init__(
        self,
        *,
        roots: Sequence[Path],
        blocked: Sequence[Path] = (),
        loader: Loader = _load_with_documents,
        catalog: SourceCatalog | None = None,
        default_audience: tuple[str, ...] = (),
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
            default_audience: The index's default audience (``ASSISTANT_DEFAULT_AUDIENCE``),
                for the audience of a file as it is now (see `page`).
        """
        self._roots = tuple(root.resolve() for root in roots)
        self._blocked = tuple(path.resolve() for path in blocked)
        self._loader = loader
        self._catalog = catalog
        self._default_audience = default_audience

    def page(self, path: str, *, user: User = ANONYMOUS, passage: str = "") -> ViewerPage:
        """Return the page for a request path such as ``hr/leave.md``, as ``user`` sees it.

        Unsafe, unknown and forbidden paths give the same 404 page, which does not
        reveal why, and files the loader rejects give a 422 page naming the problem.
        A ``passage`` (the cited text) is highlighted where it occurs, with the id ``cited``.

        The file is read as it is now, which may be newer than the indexed version
        (an ingest not run yet, or one that refused the new version): with a catalog,
        ``user`` must also be in the audience of these bytes (front matter, the access
        file now, the default), else the same 404 (round three, finding D2).
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
        if self._catalog is not None and not may_open_now(
            document, file=file, root=root, user=user, default_audience=self._default_audience
        ):
            logger.info("viewer refused %r: not readable by the user as it is now", source)
            body = "<h1>Not found</h1><p>No such indexed document.</p>"
            return ViewerPage(404, _page("Not found", body))
        return ViewerPage(200, render_document(document, passage=passage[:MAX_PASSAGE]))

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


def render_document(document: Document, *, passage: str = "") -> str:
    """Render a document as a standalone HTML page with one anchor per section.

    The section holding ``passage`` gets the class ``cited`` and the passage a
    ``<mark id="cited">`` (or, when its text spans markup it cannot follow, the
    section starts with the ``cited`` anchor), so ``#cited`` lands on it.
    """
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
    if document.kind != "markdown" and not _opens_with_title(document):
        header = f"<h1>{html.escape(meta.title or document.source)}</h1>\n{header}"
    cited = find_section(document, passage)
    parts = []
    for section in document.sections:
        inner = _section_html(document, section, cited=section is cited, passage=passage)
        parts.append(inner)
    crumbs = _crumbs(document, cited)
    return _page(meta.title or document.source, crumbs + header + "\n".join(parts))


def _opens_with_title(document: Document) -> bool:
    title = (document.meta.title or "").casefold().strip()
    first = document.sections[0].heading_path if document.sections else ()
    return bool(first) and len(first) == 1 and first[0].casefold().strip() == title


def _crumbs(document: Document, cited: Section | None) -> str:
    # Stays at the top while reading, so the cited passage's place is always named.
    path = cited.heading_path if cited is not None else (document.meta.title or document.source,)
    trail = html.escape(" > ".join(path))
    back = '<a class="back" href="/">&larr; Back to the chat</a>'
    return f'<nav class="crumbs">{back} <span>{trail}</span></nav>'


def find_section(document: Document, passage: str) -> Section | None:
    """Return the section whose text holds ``passage`` (case and spacing aside), or None."""
    wanted = _folded(passage)
    if not wanted:
        return None
    probes = [wanted, *(_folded(cell) for cell in _row_values(passage))]
    for probe in probes:
        for section in document.sections:
            if probe and probe in _folded(
                _plain(document.text[section.char_start : section.char_end])
            ):
                return section
    return None


def _row_values(passage: str) -> list[str]:
    # A table row quoted as "Header: cell; Header: cell": its longest cell locates it.
    cells = [part.split(": ", 1)[-1] for part in passage.split("; ")]
    return sorted((cell for cell in cells if len(cell) >= 8), key=len, reverse=True)[:1]


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def _section_html(document: Document, section: Section, *, cited: bool, passage: str) -> str:
    text = document.text[section.char_start : section.char_end]
    anchor = f' id="{html.escape(section.anchor, quote=True)}"' if section.anchor else ""
    inner = _section_inner(document, section, text)
    if not cited:
        return f"<section{anchor}>\n{inner}\n</section>"
    marked = mark_passage(inner, passage)
    if marked is None:
        marked = '<a id="cited"></a>' + inner
    return f'<section{anchor} class="cited">\n{marked}\n</section>'


def _section_inner(document: Document, section: Section, text: str) -> str:
    if document.kind == "markdown":
        return render_html(text)
    else:
        level = min(max(section.level, 1), 6)
        heading = html.escape(section.heading_path[-1]) if section.heading_path else ""
        page = f' <small class="meta">page {section.page}</small>' if section.page else ""
        body = _blocks_html(document, section) if section.blocks else _rest_html(text, section)
        inner = f"<h{level}>{heading}{page}</h{level}>\n{body}"
    return inner


def _blocks_html(document: Document, section: Section) -> str:
    """Render a non-Markdown section's blocks as paragraphs, lists, tables and code.

    The heading is rendered once, above; its own block is skipped (a text dump printed
    every heading twice, in monospace).
    """
    parts: list[str] = []
    items: list[str] = []
    for block in section.blocks:
        text = document.text[block.char_start : block.char_end].strip()
        if block.kind == "list_item":
            items.append(f"<li>{html.escape(_LIST_MARK.sub('', text))}</li>")
            continue
        if items:
            parts.append("<ul>" + "".join(items) + "</ul>")
            items = []
        if block.kind == "heading" or not text:
            continue
        if block.kind == "table":
            parts.append(_table_html(text))
        elif block.kind == "code":
            parts.append(f"<pre>{html.escape(text)}</pre>")
        else:
            parts.append(_paragraph_html(text))
    if items:
        parts.append("<ul>" + "".join(items) + "</ul>")
    return "\n".join(parts)


def _rest_html(text: str, section: Section) -> str:
    # A section without blocks holds its heading line at most: print that once.
    rest = text.strip()
    if section.heading_path and rest.startswith(section.heading_path[-1]):
        rest = rest[len(section.heading_path[-1]) :].strip()
    return f"<pre>{html.escape(rest)}</pre>" if rest else ""


def _paragraph_html(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # Short lines are a timetable or an address: keep them; long ones are wrapped prose.
    if len(lines) > 1 and max(len(line) for line in lines) < SHORT_LINE:
        return "<p>" + "<br>".join(html.escape(line) for line in lines) + "</p>"
    return f"<p>{html.escape(' '.join(text.split()))}</p>"


def _table_html(text: str) -> str:
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.strip() and not _SEPARATOR_ROW.match(line)
    ]
    if not rows or all(len(row) < 2 for row in rows):
        return f"<pre>{html.escape(text)}</pre>"
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for row in rows[1:]
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style>"
        f"<script>{_SCRIPT}</script></head>"
        f"<body>\n{body}\n</body></html>"
    )
