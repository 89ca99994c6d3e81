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
    defuse_markers,
    doc_link,
    escape_markdown,
    history_to_turns,
    marker_passages,
    plain_text,
    section_path,
    shown_numbers,
    source_passages,
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
    """Return the answer's Markdown with each ``[n]`` a link to the passage it relies on.

    Each marker links to its own passage (the source sentence the answer sentence it
    follows relies on), so two markers of one source may open two places. The link opens
    the viewer there; its title names the source's full section path (the chat shows
    both in place when it is clicked). Markers read 1..n in the order of first citation;
    markers that point at no source stay text.
    """
    passages = iter(marker_passages(body, answer.sources))
    shown = shown_numbers(answer.text, len(answer.sources))

    def link(match: re.Match[str]) -> str:
        number = int(match[1])
        if not 1 <= number <= len(answer.sources):
            return match[0]
        hit = answer.sources[number - 1]
        url = doc_link(hit, passage=next(passages).passage)
        label = shown[number]
        path = re.sub(r'["\\\s]+', " ", f"[{label}] {section_path(hit)}").strip()
        return f'[\\[{label}\\]]({url} "{path}")'

    return _MARKER.sub(link, body)


def _snippet(hit: Hit, *, limit: int = SNIPPET_CHARS) -> str:
    """Return the section's opening as escaped plain text, one line per paragraph or row."""
    # A document's "[2]" is no citation of ours.
    lines = plain_text(defuse_markers(hit.chunk.body)).splitlines()
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


def _source_entry(
    number: int,
    hit: Hit,
    *,
    cited: bool,
    passages: Sequence[str] = (),
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
    if hit.superseded:
        facts.append("superseded")
    if not cited:
        facts.append("not cited")
    title = escape_markdown(hit.title or hit.chunk.source)
    first = passages[0] if passages else ""
    return (
        f"**[{number}] {title}** — [open section]({doc_link(hit, passage=first)})  \n"
        f"{' · '.join(facts)}\n\n{_excerpt(hit, passages)}"
    )


def _excerpt(hit: Hit, passages: Sequence[str]) -> str:
    """Return the cited sentences, each quoted whole, or the section's opening without any."""
    if not passages:
        return f"> {_snippet(hit)}"
    if len(passages) == 1:
        return f"> {escape_markdown(passages[0])}"
    # Each marker's own sentence, each opening its own place in the viewer.
    return "\n\n".join(
        f"> {escape_markdown(passage)} [(open)]({doc_link(hit, passage=passage)})"
        for passage in passages
    )


def sources_markdown(
    answer: Answer,
    *,
    include_uncited: bool = False,
    updated: Callable[[Hit], str] | None = None,
) -> str:
    """Render an answer's sources as Markdown, one entry per cited source.

    Each entry shows the title, heading path, page, effective date, the sentences its
    markers cite (each whole) and a link to the section in the document viewer. Sources
    are numbered as the chat shows the markers (1..n in the order first cited); cited
    ones come first, uncited ones only on request (or when nothing was cited, so the
    reader still sees what was searched).

    Args:
        answer: The finished answer.
        include_uncited: Also list sources the answer did not cite.
        updated: Returns the date a source's section changed lately, or "".

    Returns:
        Markdown safe to render (document text is escaped); "" when there are no sources.
    """
    cited = {c.number for c in answer.citations if 1 <= c.number <= len(answer.sources)}
    show_all = include_uncited or not cited
    passages = source_passages(answer)
    shown = shown_numbers(answer.text, len(answer.sources))
    order = sorted(range(1, len(answer.sources) + 1), key=lambda number: shown[number])
    entries = [
        _source_entry(
            shown[number],
            answer.sources[number - 1],
            cited=number in cited,
            passages=passages.get(number, ()),
            updated=updated,
        )
        for number in order
        if show_all or number in cited
    ]
    if not show_all and len(cited) < len(answer.sources):
        entries.append(_also_retrieved(answer, cited=cited, shown=shown))
    if answer.invalid_citation_numbers:
        bad = ", ".join(f"\\[{n}\\]" for n in answer.invalid_citation_numbers)
        entries.append(f"*Citations {bad} do not match any source and were ignored.*")
    shown_claims = [s for s in answer.unsupported_sentences if s in answer.text]
    withheld = [s for s in answer.unsupported_sentences if s not in answer.text]
    if shown_claims:
        entries.append(
            "**Check these statements:** their words or figures are not in the source "
            f"they cite.\n\n{_quoted(shown_claims)}"
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


def _also_retrieved(answer: Answer, *, cited: set[int], shown: Mapping[int, int]) -> str:
    others = [
        f"\\[{shown[number]}\\] {escape_markdown(hit.title or hit.chunk.source)} — "
        f"{escape_markdown(hit.chunk.heading_path[-1])}"
        for number, hit in sorted(
            enumerate(answer.sources, start=1), key=lambda pair: shown[pair[0]]
        )
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
