"""An answer's text as a plain API client shows it, produced as the deltas stream.

Clients of the API render Markdown or do not (a terminal, a bot, a log), so the text is
plain: no mode banner (the service hands it on as data; the mode is the ``mode`` field),
no HTML entities or backslash
escapes, no image, link or tag from a document (`assistant.session.plain.plain_reply`).
Citations are numbered from [1] in the order the text shows them: source 2 cited first
reads [1], and the ``sources`` field is numbered the same way (`ReplyText.numbers`).

A delta is held back until what follows cannot change it: the line has an open ``[``,
``(``, ``<`` or code span (a link or tag split across deltas). So the streamed text is
the text of the whole answer, converted at once.
"""

from __future__ import annotations

import re

from assistant.session import plain_reply

__all__ = ["ReplyText"]

# A citation marker of the answer, not a backslashed one (a document's "[2]") nor a label.
_MARKER = re.compile(r"(?<![\\\[])\[(\d{1,3})\](?!\()")
# Held text longer than this goes out even with an open bracket: a stray "(" must not
# hold a whole answer back.
MAX_HELD_CHARS = 2000
_OPENERS = {"[": "]", "(": ")", "<": ">"}


class ReplyText:
    """The plain, renumbered text of one answer with ``sources`` sources.

    Feed each delta; `finish` returns what was held; `renumbered` converts a whole text
    (the checked answer) numbered as the stream was; `numbers` maps each source's number
    to the number shown, the sources never cited last, in their order.
    """

    def __init__(self, *, sources: int) -> None:
        self._sources = sources
        self._order: dict[int, int] = {}
        self._held = ""

    def feed(self, delta: str) -> str:
        """Return the text to send for ``delta`` (maybe "", when it is held back)."""
        self._held += delta
        cut = _safe_cut(self._held)
        ready, self._held = self._held[:cut], self._held[cut:]
        return self.renumbered(ready) if ready else ""

    def finish(self) -> str:
        """Return the text still held back."""
        held, self._held = self._held, ""
        return self.renumbered(held) if held else ""

    def renumbered(self, text: str) -> str:
        """Return ``text`` plain, its markers numbered in the order first shown."""
        return plain_reply(_MARKER.sub(self._marker, text))

    def numbers(self) -> dict[int, int]:
        """Return source number -> number shown, for every source (uncited ones last)."""
        for number in range(1, self._sources + 1):
            self._order.setdefault(number, len(self._order) + 1)
        return dict(self._order)

    def _marker(self, match: re.Match[str]) -> str:
        number = int(match[1])
        if not 1 <= number <= self._sources:
            return match[0]  # no source of ours: the citation check deals with it
        return f"[{self._order.setdefault(number, len(self._order) + 1)}]"


def _safe_cut(text: str) -> int:
    """Return how much of ``text`` can go: up to a space after which nothing is left open."""
    line_start = text.rfind("\n") + 1
    open_at = _first_unclosed(text, line_start)
    limit = len(text) if open_at is None or len(text) > MAX_HELD_CHARS else open_at
    spaces = [text.rfind(space, 0, limit) for space in (" ", "\n", "\t")]
    return max(spaces) + 1


def _first_unclosed(text: str, start: int) -> int | None:
    """Return where the earliest bracket or code span left open after ``start`` begins.

    A ``(`` right after a closed ``[...]`` (a link's target) counts from that ``[``.
    """
    stack: list[tuple[str, int]] = []
    code_at: int | None = None
    closed = (-1, -1)  # where the last "[...]" ended and began
    for index in range(start, len(text)):
        char = text[index]
        if char == "`":
            code_at = None if code_at is not None else index
        elif code_at is not None:
            continue
        elif char in _OPENERS:
            target = char == "(" and _follows(text, index, closed[0])
            begins = closed[1] if target else index
            stack.append((_OPENERS[char], begins))
        elif stack and char == stack[-1][0]:
            _, begun = stack.pop()
            closed = (index, begun) if char == "]" else closed
    opened = [index for _, index in stack] + ([code_at] if code_at is not None else [])
    return min(opened) if opened else None


def _follows(text: str, index: int, bracket_end: int) -> bool:
    # "](" or, in escaped document text, "\\]\\(" (unescaped, it is a link all the same).
    return bracket_end == index - 1 or (bracket_end == index - 2 and text[index - 1] == "\\")
