"""How one finished answer is laid out in the chat: Sources summary, no-match list, filters.

Pure functions (no gradio): whether the Sources panel starts collapsed and its one-line
title, the no-match answer's closest sections listed once (grouped by document, with
links), and the active filters in words for the Filters header and a no-match answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from assistant.session import MAX_K, MAX_QUESTION_CHARS, Problem, shown_numbers
from assistant.types import Answer, Hit, SearchFilters
from assistant.web.format import doc_link, escape_markdown, section_path
from assistant.words import valid_unicode

__all__ = [
    "FAILED_MESSAGE",
    "NO_INDEX_MESSAGE",
    "SUMMARY_CHARS",
    "filter_note",
    "filter_words",
    "filters_label",
    "no_match_body",
    "problem_words",
    "sources_collapsed",
    "sources_title",
]

SUMMARY_CHARS = 240
MAX_CLOSEST = 5

NO_INDEX_MESSAGE = (
    "There is no search index yet. Run `python ingest.py` to index the policy documents; "
    "the chat uses the new index from the next question on, with no restart."
)
FAILED_MESSAGE = "Sorry, the assistant could not answer: {reason}"
STORE_DOWN_REASON = (
    "the document index cannot be reached right now. Try again in a minute; "
    "if it persists, tell the administrator (the server log has the details)."
)
_PICK = (
    "Choose documents and tags from the Filters lists (reload the page to see newly "
    "indexed documents)."
)


def problem_words(problem: Problem) -> str:
    """Return what the chat says instead of an answer (Markdown; document names escaped)."""
    value = escape_markdown(valid_unicode(problem.value))
    close = " or ".join(f"`{escape_markdown(c)}`" for c in problem.close)
    words = {
        "empty": "Please type a question.",
        "too long": f"Your question is {problem.length:,} characters long; please shorten "
        f"it to at most {MAX_QUESTION_CHARS:,} characters.",
        "bad k": f"The number of sources must be a whole number from 1 to {MAX_K}.",
        "unknown filter": f"This filter value is not in the index: {value}"
        + (f" (did you mean {close}?)" if close else "")
        + f". {_PICK}",
        "ambiguous filter": f"The filter value {value} fits several documents: {close}. {_PICK}",
        "no index": NO_INDEX_MESSAGE,
        "store down": FAILED_MESSAGE.format(reason=STORE_DOWN_REASON),
        "failed": FAILED_MESSAGE.format(reason=problem.detail),
    }
    return words[problem.kind]


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


NOT_COVERED = "The policy documents do not appear to cover this question"
NOT_COVERED_OUTRO = "Try rephrasing, or ask the policy owner directly."


def no_match_body(closest: Sequence[Hit], reason: str) -> str:
    """Return the chat's "not covered" answer: the closest sections once, grouped by document.

    The sections come as data (`Outcome.closest`), each a link to its place.
    """
    why = f" ({escape_markdown(reason)})" if reason else ""
    if not closest:
        return f"{NOT_COVERED}{why}. {NOT_COVERED_OUTRO}"
    groups: dict[str, list[str]] = {}
    for hit in closest[:MAX_CLOSEST]:
        title = hit.title or hit.chunk.source
        section = " > ".join(hit.chunk.heading_path[1:]) or hit.chunk.heading_path[-1]
        link = f"[{escape_markdown(section)}]({doc_link(hit)})"
        if link not in groups.setdefault(title, []):
            groups[title].append(link)
    lines = [
        f"- **{escape_markdown(title)}**: " + "; ".join(links) for title, links in groups.items()
    ]
    intro = f"{NOT_COVERED}{why}, so I will not guess. The closest sections I found are:"
    return "\n".join([intro, "", *lines, "", NOT_COVERED_OUTRO])


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
