"""The sources of an answer as data, numbered as its ``[n]`` markers; each door renders them.

`source_entries` gives every source of an answer a `SourceEntry`: its number, the number a
reader sees (1..n in the order the answer first cites them), the hit, whether the answer
cites it, the sentences of the source its markers rely on (`passages`, one per distinct
marker passage) and the viewer path that opens the document at the first. `shown_entries`
is the one rule of which to show: the cited sources in the order shown, or every source
when none is cited (a "not covered" answer lists the closest sections, so the reader
still sees what was searched).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from assistant.session.passages import shown_numbers, source_passages
from assistant.types import Answer, Hit

__all__ = ["SourceEntry", "doc_link", "section_path", "shown_entries", "source_entries"]


@dataclass(frozen=True, slots=True)
class SourceEntry:
    """One source of an answer.

    ``number`` is the source's number in the answer text, ``shown`` the one a reader
    sees; ``passages`` the sentences of the source its markers rely on, ``passage`` the
    first ("" when uncited or not found); ``path`` the viewer path (highlighting the
    first passage when there is one); ``updated_on`` the date its section changed
    lately, or "".
    """

    number: int
    hit: Hit
    cited: bool
    passage: str = ""
    path: str = ""
    updated_on: str = ""
    shown: int = 0
    passages: tuple[str, ...] = ()


def source_entries(
    answer: Answer, *, updated: Callable[[Hit], str] | None = None
) -> tuple[SourceEntry, ...]:
    """Return every source of ``answer``, numbered as its markers."""
    cited = {c.number for c in answer.citations}
    passages = source_passages(answer)
    shown = shown_numbers(answer.text, len(answer.sources))
    return tuple(
        SourceEntry(
            number=number,
            hit=hit,
            cited=number in cited,
            passage=passages.get(number, ("",))[0],
            path=doc_link(hit, passage=passages.get(number, ("",))[0]),
            updated_on=updated(hit) if updated else "",
            shown=shown[number],
            passages=passages.get(number, ()),
        )
        for number, hit in enumerate(answer.sources, start=1)
    )


def shown_entries(entries: Sequence[SourceEntry]) -> tuple[SourceEntry, ...]:
    """Return the entries to show, in the order shown: the cited ones, or all when none is."""
    cited = tuple(entry for entry in entries if entry.cited)
    return tuple(sorted(cited or entries, key=lambda entry: entry.shown or entry.number))


def doc_link(hit: Hit, *, base: str = "/doc/", passage: str = "") -> str:
    """Return the viewer URL that opens the hit's source at its section.

    With the cited ``passage`` the viewer highlights it and ``#cited`` lands on it
    (the chunk's own anchor can name an earlier sub-section than the passage's).
    """
    path = quote(hit.chunk.source, safe="/")
    if passage:
        return f"{base}{path}?passage={quote(passage, safe='')}#cited"
    anchor = quote(hit.chunk.anchor, safe="-_.")
    return f"{base}{path}#{anchor}" if anchor else f"{base}{path}"


def section_path(hit: Hit) -> str:
    """Return "Title > Chapter > Section", the whole way down to the hit's section."""
    title = hit.title or hit.chunk.source
    below = [h for h in hit.chunk.heading_path[1:] if h]
    return " > ".join([title, *below])
