"""How one finished answer is laid out in the chat: Sources summary, no-match list, filters.

Pure functions (no gradio): whether the Sources panel starts collapsed and its one-line
title, the no-match answer's closest sections listed once (grouped by document, with
links), and the active filters in words for the Filters header and a no-match answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from assistant.session.passages import shown_numbers
from assistant.types import Answer, Hit, SearchFilters
from assistant.web.format import doc_link, escape_markdown, section_path

__all__ = [
    "SUMMARY_CHARS",
    "filter_note",
    "filter_words",
    "filters_label",
    "no_match_body",
    "sources_collapsed",
    "sources_title",
]

SUMMARY_CHARS = 240
MAX_CLOSEST = 5


def cited_numbers(answer: Answer) -> list[int]:
    """Return the source numbers the answer cites, in order."""
    return sorted({c.number for c in answer.citations if 1 <= c.number <= len(answer.sources)})


def sources_title(answer: Answer) -> str:
    """Return "2 sources: Loan Policy > Emergency Loans, ..." for the cited sources, as shown."""
    shown = shown_numbers(answer.text, len(answer.sources))
    numbers = cited_numbers(answer) or list(range(1, len(answer.sources) + 1))
    numbers.sort(key=lambda number: shown[number])
    places = []
    for number in numbers:
        place = _place(answer.sources[number - 1])
        if place not in places:
            places.append(place)
    noun = "source" if len(numbers) == 1 else "sources"
    summary = f"{len(numbers)} {noun}: " + ", ".join(places)
    if len(summary) > SUMMARY_CHARS:
        summary = summary[: SUMMARY_CHARS - 1].rsplit(" ", 1)[0].rstrip(",") + "…"
    return escape_markdown(summary)


def _place(hit: Hit) -> str:
    """Return the hit's full section path: a shortened one is ambiguous (issue 30)."""
    return section_path(hit)


def sources_collapsed(answer: Answer, *, body: str, sources_text: str) -> bool:
    """Return whether Sources start collapsed: the answer is cited and the panel is longer."""
    return bool(cited_numbers(answer)) and len(sources_text) > len(body)


def no_match_body(body: str, hits: Sequence[Hit]) -> str | None:
    """Return a no-match answer with its closest sections listed once, grouped by document.

    ``body`` is the service's no-match text (intro, a "- title: section" list, outro);
    the list is replaced by one line per document with a link per section. None when
    the body has no such list (nothing to rewrite).
    """
    head, marker, rest = body.partition("\n\n- ")
    if not marker or not hits:
        return None
    _, _, outro = rest.partition("\n\n")
    groups: dict[str, list[str]] = {}
    for hit in hits[:MAX_CLOSEST]:
        title = hit.title or hit.chunk.source
        section = " > ".join(hit.chunk.heading_path[1:]) or hit.chunk.heading_path[-1]
        link = f"[{escape_markdown(section)}]({doc_link(hit)})"
        if link not in groups.setdefault(title, []):
            groups[title].append(link)
    lines = [
        f"- **{escape_markdown(title)}**: " + "; ".join(links) for title, links in groups.items()
    ]
    return "\n".join([head, "", *lines, "", outro]).rstrip()


def filter_words(filters: SearchFilters, titles: Mapping[str, str]) -> str:
    """Return the active filters in words ("Staff Leave Policy, tag hr"), or ""."""
    names = [titles.get(source) or source for source in filters.sources]
    names += [f"tag {tag}" for tag in filters.tags]
    return ", ".join(names)


def filter_note(filters: SearchFilters, titles: Mapping[str, str]) -> str:
    """Return the no-match answer's note on the active filters, or "" without filters."""
    words = filter_words(filters, titles)
    if not words:
        return ""
    return (
        f"*Nothing matched with the filter {escape_markdown(words)}; clear the Filters "
        "to search every document.*"
    )


def filters_label(sources: Sequence[object], tags: Sequence[object]) -> str:
    """Return the Filters header: "Filters · 1 document, 2 tags" or "Filters"."""
    parts = []
    if sources:
        parts.append(f"{len(sources)} document{'' if len(sources) == 1 else 's'}")
    if tags:
        parts.append(f"{len(tags)} tag{'' if len(tags) == 1 else 's'}")
    return "Filters · " + ", ".join(parts) if parts else "Filters"
