"""The sources of an answer as data, numbered as its ``[n]`` markers; each door renders them.

`source_entries` gives every source of an answer a `SourceEntry`: its number, the hit,
whether the answer cites it, the sentence of the source it relies on (`passages`) and the
viewer path that opens the document there. `shown_entries` is the one rule of which to
show: the cited sources in number order, or every source when none is cited (a "not
covered" answer lists the closest sections, so the reader still sees what was searched).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from assistant.session.passages import cited_passages
from assistant.types import Answer, Hit

__all__ = ["SourceEntry", "doc_link", "section_path", "shown_entries", "source_entries"]


@dataclass(frozen=True, slots=True)
class SourceEntry:
    """One source of an answer.

    ``passage`` is the sentence of the source the answer relies on ("" when uncited or
    not found); ``path`` the viewer path (highlighting the passage when there is one);
    ``updated_on`` the date its section changed lately, or "".
    """

    number: int
    hit: Hit
    cited: bool
    passage: str = ""
    path: str = ""
    updated_on: str = ""


def source_entries(
    answer: Answer, *, updated: Callable[[Hit], str] | None = None
) -> tuple[SourceEntry, ...]:
    """Return every source of ``answer``, numbered as its markers."""
    cited = {c.number for c in answer.citations}
    passages = cited_passages(answer)
    return tuple(
        SourceEntry(
            number=number,
            hit=hit,
            cited=number in cited,
            passage=passages.get(number, ""),
            path=doc_link(hit, passage=passages.get(number, "")),
            updated_on=updated(hit) if updated else "",
        )
        for number, hit in enumerate(answer.sources, start=1)
    )


def shown_entries(entries: Sequence[SourceEntry]) -> tuple[SourceEntry, ...]:
    """Return the entries to show: the cited ones, or all of them when none is cited."""
    cited = tuple(entry for entry in entries if entry.cited)
    return cited or tuple(entries)


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
