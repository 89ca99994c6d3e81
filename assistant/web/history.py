"""A conversation to keep: the chat history as Markdown or printable HTML, citations included.

The chat's own messages are the export: each question, each answer as shown,
and the answer's sources message, which lists every cited source with its
title, section path, page, effective date and viewer link (`format.sources_markdown`).
Viewer links become absolute (``base_url``), so they work outside the chat.
Trace messages are left out. The HTML renders only the small Markdown subset
the chat writes (bold, links, quotes, list items, escapes); everything else is
escaped text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence

from assistant.web.format import unlinked_markers
from assistant.words import valid_unicode

__all__ = ["conversation_html", "conversation_markdown"]

_LINK = re.compile(r"\[((?:\\.|[^\]\\])*)\]\((/doc/[^)\s]*)\)")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![*\\])\*(?![*\s])(.+?)(?<![*\s\\])\*(?!\*)")
# The chat's Markdown escapes document text as HTML entities; a file read as text
# shows them raw. One pass, so "&amp;lt;" (a literal "&lt;") stays "&lt;".
_ENTITY = re.compile(r"&(amp|lt|gt|quot|#39);")
_AS_MARKDOWN = {"amp": "&", "lt": "\\<", "gt": ">", "quot": '"', "#39": "'"}
_AS_TEXT = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "#39": "'"}
_ESCAPE = re.compile(r"\\([\\`*_\[\]()#!|~.:@+=-])")
# Titled messages are the sources (under "Sources", "Closest sections" or a one-line
# summary such as "2 sources: Loan Policy > Interest") and the trace, which is left out.
_TRACE_TITLE = "Trace"


def _messages(history: object) -> list[tuple[str, str, str]]:
    """Return ``(role, title, text)`` of each text message, traces left out."""
    if not isinstance(history, Sequence) or isinstance(history, str):
        return []
    kept = []
    for message in history:
        if not isinstance(message, Mapping):
            continue
        role, content, metadata = (message.get(k) for k in ("role", "content", "metadata"))
        title = metadata.get("title", "") if isinstance(metadata, Mapping) else ""
        if isinstance(content, list):  # Gradio's typed parts
            content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
        if not isinstance(content, str) or role not in ("user", "assistant"):
            continue
        if title == _TRACE_TITLE:
            continue
        # A citation link reads as its marker; the Sources after it carry the links.
        kept.append((str(role), str(title), valid_unicode(unlinked_markers(content))))
    return kept


def _unentity(text: str, table: Mapping[str, str]) -> str:
    return _ENTITY.sub(lambda m: table[m[1]], text)


def _absolute(text: str, base_url: str) -> str:
    base = base_url.rstrip("/")
    return _LINK.sub(lambda m: f"[{m[1]}]({base}{m[2]})", text)


def conversation_markdown(history: object, *, base_url: str, title: str) -> str:
    """Return the conversation as a Markdown document."""
    lines = [f"# {title}", ""]
    for role, heading, text in _messages(history):
        if role == "user":
            lines += ["## Question", "", _quote_plain(text), ""]
        elif heading:
            lines += [f"### {_unentity(heading, _AS_MARKDOWN)}", ""]
            lines += [_unentity(_absolute(text, base_url), _AS_MARKDOWN), ""]
        else:
            lines += ["## Answer", "", _unentity(_absolute(text, base_url), _AS_MARKDOWN), ""]
    return "\n".join(lines).rstrip() + "\n"


def _quote_plain(text: str) -> str:
    # The question is what the user typed: shown as text, never as Markdown.
    return "\n".join("    " + line for line in text.splitlines()) or "    "


def conversation_html(history: object, *, base_url: str, title: str) -> str:
    """Return the conversation as one printable HTML page (no scripts, no outside files)."""
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:48rem;margin:2rem auto;"
        "line-height:1.5}blockquote{color:#444;border-left:3px solid #ccc;margin:0;"
        "padding-left:1rem}.question{background:#f3f3f3;padding:.5rem 1rem;white-space:pre-wrap}"
        "@media print{a{color:inherit}a::after{content:' <' attr(href) '>';font-size:80%}}"
        "</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    for role, heading, text in _messages(history):
        if role == "user":
            parts += ["<h2>Question</h2>", f'<p class="question">{html.escape(text)}</p>']
        else:
            parts.append(f"<h3>{_plain(heading)}</h3>" if heading else "<h2>Answer</h2>")
            parts.append(_render(_absolute(text, base_url)))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _render(markdown: str) -> str:
    """Render the chat's Markdown subset; any other text stays escaped text."""
    blocks = []
    for block in re.split(r"\n\s*\n", markdown.strip()):
        lines = block.splitlines()
        if all(line.startswith(">") for line in lines):
            inner = " ".join(line.lstrip("> ") for line in lines)
            blocks.append(f"<blockquote>{_inline(inner)}</blockquote>")
        elif all(line.startswith("- ") for line in lines):
            items = "".join(f"<li>{_inline(line[2:])}</li>" for line in lines)
            blocks.append(f"<ul>{items}</ul>")
        else:
            blocks.append("<p>" + "<br>".join(_inline(line.rstrip()) for line in lines) + "</p>")
    return "\n".join(blocks)


def _inline(text: str) -> str:
    links: list[str] = []

    def keep_link(match: re.Match[str]) -> str:
        label = _plain(match[1])
        links.append(f'<a href="{html.escape(match[2])}">{label}</a>')
        return f"\0{len(links) - 1}\0"

    text = re.sub(r"\[((?:\\.|[^\]\\])*)\]\((https?://[^)\s]*)\)", keep_link, text)
    bolded = _BOLD.sub(lambda m: "\1" + m[1] + "\2", text)
    styled = _ITALIC.sub(lambda m: "\3" + m[1] + "\4", bolded)
    out = _plain(styled).replace("\1", "<strong>").replace("\2", "</strong>")
    out = out.replace("\3", "<em>").replace("\4", "</em>")
    return re.sub(r"\0(\d+)\0", lambda m: links[int(m[1])], out)


def _plain(text: str) -> str:
    return html.escape(_unentity(_ESCAPE.sub(r"\1", text), _AS_TEXT))
