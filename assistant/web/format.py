"""Pure helpers behind the chat UI: untrusted history in, safe Markdown out.

Nothing here imports gradio, so the rules for what reaches the model (turns)
and what reaches the browser (sources and trace Markdown) are tested without a
server. Gradio's history arrives from the browser and is treated as untrusted:
only ``user`` and ``assistant`` roles survive, sources and trace messages
(those with a metadata title) are dropped, and turns and characters are capped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from assistant.session import (
    cited_passages,
    defuse_markers,
    doc_link,
    escape_markdown,
    history_to_turns,
    plain_text,
    section_path,
    unlinked_markers,
)
from assistant.types import Answer, Hit
from assistant.web.trace import readable_trace, reasoning_block

__all__ = [
    "doc_link",
    "escape_markdown",
    "history_to_turns",
    "linked_markers",
    "section_path",
    "sources_markdown",
    "trace_markdown",
    "unlinked_markers",
]

SNIPPET_CHARS = 320
# A citation marker of the answer text, not an escaped one (backslashed) nor a link label.
_MARKER = re.compile(r"(?<![\\\[])\[(\d{1,3})\](?!\()")


def linked_markers(body: str, answer: Answer) -> str:
    """Return the answer's Markdown with each ``[n]`` a link to source n's cited passage.

    The link opens the viewer at the sentence the answer relies on; its title names
    the source's full section path (the chat shows both in place when it is clicked).
    Markers that point at no source stay text.
    """
    passages = cited_passages(answer)

    def link(match: re.Match[str]) -> str:
        number = int(match[1])
        if not 1 <= number <= len(answer.sources):
            return match[0]
        hit = answer.sources[number - 1]
        url = doc_link(hit, passage=passages.get(number, ""))
        path = re.sub(r'["\\\s]+', " ", f"[{number}] {section_path(hit)}").strip()
        return f'[\\[{number}\\]]({url} "{path}")'

    return _MARKER.sub(link, body)


def _snippet(hit: Hit, *, limit: int = SNIPPET_CHARS, passage: str = "") -> str:
    """Return the excerpt as escaped plain text, one line per paragraph or table row.

    With the cited ``passage`` the excerpt starts at the line holding it, so the
    panel shows what the answer relies on even deep in a long section.
    """
    lines = _excerpt_lines(hit, passage)
    kept: list[str] = []
    size = 0
    for line in lines:
        if size + len(line) > limit:
            room = limit - size
            if room > 40 or not kept:
                kept.append(line[:room].rsplit(" ", 1)[0] + " …")
            else:
                kept[-1] += " …"
            break
        kept.append(line)
        size += len(line)
    return "  \n> ".join(escape_markdown(line) for line in kept)


def _excerpt_lines(hit: Hit, passage: str) -> list[str]:
    # A document's "[2]" is no citation of ours.
    body = plain_text(defuse_markers(hit.chunk.body)).splitlines()
    if not passage:
        return body
    for text in (body, plain_text(defuse_markers(hit.section_text)).splitlines()):
        for index, line in enumerate(text):
            if passage[:60] in line:
                return text[index:]
    return body


def _source_entry(
    number: int,
    hit: Hit,
    *,
    cited: bool,
    passage: str = "",
    updated: Callable[[Hit], str] | None = None,
) -> str:
    facts = [f"section: {escape_markdown(hit.chunk.breadcrumb)}"]
    if hit.chunk.page:
        facts.append(f"page {hit.chunk.page}")
    if hit.effective_date:
        facts.append(f"effective {escape_markdown(hit.effective_date)}")
    changed = updated(hit) if updated else ""
    if changed:
        facts.append(f"updated on {escape_markdown(changed)}")
    facts.append(f"relevance {hit.score:.2f}")
    if hit.superseded:
        facts.append("superseded")
    if not cited:
        facts.append("not cited")
    title = escape_markdown(hit.title or hit.chunk.source)
    return (
        f"**[{number}] {title}** — [open section]({doc_link(hit, passage=passage)})  \n"
        f"{' · '.join(facts)}\n\n> {_snippet(hit, passage=passage)}"
    )


def sources_markdown(
    answer: Answer,
    *,
    include_uncited: bool = False,
    updated: Callable[[Hit], str] | None = None,
) -> str:
    """Render an answer's sources as Markdown, one entry per ``[n]``.

    Each entry shows the title, heading path, page, effective date, relevance
    score, the cited snippet and a link to the section in the document viewer.
    Cited sources come first in number order; uncited ones only on request
    (or when nothing was cited, so the reader still sees what was searched).

    Args:
        answer: The finished answer.
        include_uncited: Also list sources the answer did not cite.
        updated: Returns the date a source's section changed lately, or "".

    Returns:
        Markdown safe to render (document text is escaped); "" when there are no sources.
    """
    cited = sorted({c.number for c in answer.citations if 1 <= c.number <= len(answer.sources)})
    show_all = include_uncited or not cited
    passages = cited_passages(answer)
    entries = [
        _source_entry(
            number,
            hit,
            cited=number in cited,
            passage=passages.get(number, ""),
            updated=updated,
        )
        for number, hit in enumerate(answer.sources, start=1)
        if show_all or number in cited
    ]
    if not show_all and len(cited) < len(answer.sources):
        entries.append(_also_retrieved(answer, cited=set(cited)))
    if answer.invalid_citation_numbers:
        bad = ", ".join(f"\\[{n}\\]" for n in answer.invalid_citation_numbers)
        entries.append(f"*Citations {bad} do not match any source and were ignored.*")
    shown = [s for s in answer.unsupported_sentences if s in answer.text]
    withheld = [s for s in answer.unsupported_sentences if s not in answer.text]
    if shown:
        entries.append(
            "**Check these statements:** their words or figures are not in the source "
            f"they cite.\n\n{_quoted(shown)}"
        )
    if withheld:
        # Grounded only: the reader should still learn what the model claimed, as a claim.
        entries.append(
            "**Withheld from the answer** (no source holds their words or figures; a "
            f"note stands where each stood):\n\n{_quoted(withheld)}"
        )
    return "\n\n".join(entries)


def _quoted(sentences: Sequence[str]) -> str:
    return "\n".join(f"> {escape_markdown(s)}" for s in sentences)


def _also_retrieved(answer: Answer, *, cited: set[int]) -> str:
    others = [
        f"\\[{number}\\] {escape_markdown(hit.title or hit.chunk.source)} — "
        f"{escape_markdown(hit.chunk.heading_path[-1])}"
        for number, hit in enumerate(answer.sources, start=1)
        if number not in cited
    ]
    return "*Also retrieved, not cited:* " + "; ".join(others)


def trace_markdown(
    *,
    question: str,
    query: str,
    lines: Sequence[str],
    timings: Mapping[str, float],
    names: Callable[[str], str] | None = None,
    filters: str = "",
    reasoning: str = "",
) -> str:
    """Render the retrieval trace of one answer as a Markdown code block.

    Args:
        question: What the user typed.
        query: The standalone query actually searched.
        lines: The service's trace lines (candidates, prompt tokens, timings).
        timings: UI-side timings in seconds, e.g. ``first token`` (each shown once).
        names: Returns "Title > Section" for a chunk id, shown beside each candidate.
        filters: The active filters in words.
        reasoning: The model's reasoning, shown collapsed after the block.

    Returns:
        Markdown: a fenced block, so nothing in it renders as Markdown or HTML, then
        the reasoning (escaped) in a collapsed ``<details>`` when there is any.
    """
    body = [f"question: {question}", f"searched: {query}"]
    rest = [line for line in lines if line not in body]
    body += readable_trace(rest, names=names, filters=filters, timings=timings)
    text = "\n".join(body)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    block = reasoning_block(reasoning)
    return f"{fence}text\n{text}\n{fence}" + (f"\n\n{block}" if block else "")
