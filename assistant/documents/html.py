"""HTML → text, metadata and sections (BeautifulSoup with lxml).

Dates come from ``<meta>`` tags (``dc.date``, ``article:modified_time``...),
else from an "Effective ..." line near the top. Scripts, styles, templates and
the head are dropped, and so is site chrome: ``nav``, ``aside``, page-level
``header`` and ``footer``, and elements whose ``role`` says navigation, banner
or contentinfo; with a ``<main>``, only its content is read. ``h1``-``h6``
start sections; ``p``, ``li``, ``pre``, ``blockquote``, ``table`` (and
``dt``/``dd``) become blocks; loose text in containers becomes paragraphs. The
text that offsets refer to is built here, one blank line between pieces.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bs4 import BeautifulSoup
from bs4.element import NavigableString, PageElement, PreformattedString, Tag

from assistant.documents.assemble import SectionAssembler
from assistant.documents.base import Extracted
from assistant.documents.builder import TextBuilder, collapse, table_lines
from assistant.documents.dates import META_TAG, DateClaim, parse_date, resolve_dates
from assistant.documents.decode import check_line_lengths
from assistant.errors import DocumentError
from assistant.types import BlockKind, DocMeta

__all__ = ["load", "parse_html"]

_DROPPED = ["script", "style", "noscript", "template", "head", "svg", "canvas", "iframe"]
# Site chrome, not policy text: menus, sidebars, page banners and footers.
_CHROME = ["nav", "aside"]
_CHROME_ROLES = frozenset({"navigation", "contentinfo", "banner", "complementary", "search"})
# A header or footer inside these belongs to that content (an article's own title or notes).
_CONTENT = ["main", "article", "section"]
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
# <meta> names (name, property, http-equiv or itemprop; case-insensitive), best first.
_EFFECTIVE_META = (
    "effective-date",
    "effective_date",
    "dc.date.valid",
    "dcterms.valid",
    "dc.date",
    "dcterms.date",
    "dc.date.issued",
    "dcterms.issued",
    "date",
    "article:published_time",
    "datepublished",
)
_UPDATED_META = (
    "dc.date.modified",
    "dcterms.modified",
    "article:modified_time",
    "og:updated_time",
    "last-modified",
    "datemodified",
    "revised",
)
_BLOCKS: dict[str, BlockKind] = {
    "p": "paragraph",
    "dt": "paragraph",
    "dd": "paragraph",
    "figcaption": "paragraph",
    "address": "paragraph",
    "li": "list_item",
    "pre": "code",
    "blockquote": "other",
    "table": "table",
}
_CONTAINERS = frozenset(
    {
        "html", "body", "div", "section", "article", "main", "header", "footer", "nav",
        "aside", "form", "figure", "fieldset", "details", "summary", "center", "ul", "ol",
        "dl", "menu", "hgroup", "search",
    }
)  # fmt: skip
_STRUCTURAL = _CONTAINERS | set(_HEADINGS) | set(_BLOCKS)


@dataclass(frozen=True, slots=True)
class _Piece:
    text: str
    kind: BlockKind
    level: int = 0  # > 0 for headings


def parse_html(data: bytes, *, source: str, fallback_title: str) -> Extracted:
    """Extract text and sections from an HTML file.

    Args:
        data: The raw file bytes (the encoding comes from the BOM, meta tag or detection).
        source: The document's name, for errors.
        fallback_title: Title used without ``<title>`` or ``<h1>``.

    Returns:
        The extracted text, its metadata and its sections.

    Raises:
        DocumentError: The file is binary or has an overlong line.
    """
    if b"\x00" in data and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DocumentError(source, "binary content (NUL bytes) in an HTML file")
    soup = BeautifulSoup(data, "lxml")
    head_title = collapse(soup.title.get_text()) if soup.title else ""
    dates = _meta_dates(soup)
    for tag in soup(_DROPPED):
        tag.decompose()
    pieces: list[_Piece] = []
    _walk(_main_content(soup), pieces)
    first_h1 = next((p.text for p in pieces if p.level == 1), "")
    title = head_title or first_h1 or fallback_title
    builder = TextBuilder()
    assembler = SectionAssembler(title=title)
    for piece in pieces:
        start, end = builder.add(piece.text)
        if piece.level:
            assembler.heading(piece.text, level=piece.level, start=start)
        else:
            assembler.block(piece.kind, start, end)
    text = builder.text()
    check_line_lengths(text, source=source)
    meta = resolve_dates(DocMeta(title=title), text, explicit=(dates,))
    return Extracted(text=text, meta=meta, sections=assembler.finish(end=len(text)))


def _main_content(soup: BeautifulSoup) -> Tag:
    """Return the element holding the page's own text, with site chrome removed.

    ``<main>`` (or ``role="main"``) is the content when present; navigation,
    sidebars and page-level headers and footers are dropped either way.
    """
    tags = [tag for tag in soup.find_all(True) if isinstance(tag, Tag)]
    chrome = [tag for tag in tags if tag.name in _CHROME or _role(tag) in _CHROME_ROLES]
    chrome += [
        tag
        for tag in tags
        if tag.name in ("header", "footer") and tag.find_parent(_CONTENT) is None
    ]
    for tag in chrome:
        if not tag.decomposed:  # inside chrome already dropped
            tag.decompose()
    kept = [tag for tag in tags if not tag.decomposed]
    main = next((t for t in kept if t.name == "main" or _role(t) == "main"), None)
    return main or soup.body or soup


def _role(tag: Tag) -> str:
    role = tag.get("role")
    return role.strip().lower() if isinstance(role, str) else ""


def _meta_dates(soup: BeautifulSoup) -> DateClaim:
    """Return the dates the page's ``<meta>`` tags state."""
    values: dict[str, str] = {}
    for tag in soup.find_all("meta"):
        content = tag.get("content")
        if not isinstance(content, str):
            continue
        for attr in ("name", "property", "http-equiv", "itemprop"):
            key = tag.get(attr)
            if isinstance(key, str):
                values.setdefault(key.strip().lower(), content)
    effective = _first_date(values, _EFFECTIVE_META)
    return DateClaim(META_TAG, effective, _first_date(values, _UPDATED_META))


def _first_date(values: dict[str, str], names: tuple[str, ...]) -> str:
    dates = (parse_date(values[name]) for name in names if name in values)
    return next((d for d in dates if d), "")


def _walk(node: Tag, out: list[_Piece]) -> None:
    loose: list[PageElement] = []
    for child in node.children:
        if not isinstance(child, Tag) or child.name not in _STRUCTURAL:
            loose.append(child)
            continue
        _flush(loose, out)
        if child.name in _CONTAINERS:
            _walk(child, out)
        elif child.name in _HEADINGS:
            level = _HEADINGS[child.name]
            _append(out, _Piece(collapse(_inline(child.children)), "heading", level))
        else:
            kind = _BLOCKS[child.name]
            _append(out, _Piece(_render(child, kind), kind))
    _flush(loose, out)


def _append(out: list[_Piece], piece: _Piece) -> None:
    if piece.text.strip():
        out.append(piece)


def _flush(loose: list[PageElement], out: list[_Piece]) -> None:
    if loose:
        _append(out, _Piece(collapse(_inline(loose)), "paragraph"))
        loose.clear()


def _inline(nodes: Iterable[PageElement]) -> str:
    """Return the text of ``nodes``, with a space where block-level tags meet."""
    parts: list[str] = []
    for node in nodes:
        if isinstance(node, PreformattedString):
            continue  # comments, doctypes, processing instructions
        if isinstance(node, NavigableString):
            parts.append(str(node))
        elif isinstance(node, Tag):
            inner = _inline(node.children)
            inline = node.name not in _CONTAINERS and node.name not in _BLOCKS
            parts.append(inner if inline and node.name != "br" else f" {inner} ")
    return "".join(parts)


def _render(tag: Tag, kind: BlockKind) -> str:
    if kind == "code":
        return tag.get_text().strip("\n").rstrip()
    if kind == "table":
        rows = [
            [_inline(cell.children) for cell in row.find_all(["th", "td"], recursive=False)]
            for row in tag.find_all("tr")
        ]
        return table_lines(rows)
    if kind == "list_item":
        return _list_item(tag, depth=0)
    return collapse(_inline(tag.children))


def _list_item(item: Tag, *, depth: int) -> str:
    own: list[PageElement] = []
    nested: list[str] = []
    for child in item.children:
        if isinstance(child, Tag) and child.name in ("ul", "ol"):
            subs = child.find_all("li", recursive=False)
            nested.extend(_list_item(sub, depth=depth + 1) for sub in subs)
        else:
            own.append(child)
    return "\n".join(["  " * depth + "- " + collapse(_inline(own)), *nested])


def load(data: bytes, *, source: str, fallback: str) -> Extracted:
    """Load one HTML file's bytes (the `assistant.documents.loading` entry point)."""
    return parse_html(data, source=source, fallback_title=fallback)
