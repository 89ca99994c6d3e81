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
from urllib.parse import quote

from assistant.answering.citations import defuse_markers
from assistant.answering.safety import escape_markdown
from assistant.types import MAX_TURN_CHARS, MAX_TURNS, Answer, Hit, Turn
from assistant.web.passages import cited_passages
from assistant.web.plain import plain_text
from assistant.web.trace import readable_trace, reasoning_block
from assistant.words import valid_unicode

__all__ = [
    "doc_link",
    "escape_markdown",
    "history_to_turns",
    "sources_markdown",
    "trace_markdown",
]

SNIPPET_CHARS = 320


def history_to_turns(
    history: object,
    *,
    max_turns: int = MAX_TURNS,
    max_chars: int = MAX_TURN_CHARS,
) -> tuple[Turn, ...]:
    """Convert Gradio chat history into the newest conversation turns.

    Accepts message dicts (or objects with ``role``/``content``/``metadata``
    attributes) whose content is a string or a list of typed parts. Messages
    with a metadata title (sources, trace), other roles and non-text content
    are skipped; each text is cut to ``max_chars`` and only the newest
    ``max_turns`` turns are kept, in conversation order.

    Args:
        history: The history as Gradio passes it (untrusted).
        max_turns: How many turns to keep at most.
        max_chars: How many characters of each turn to keep.

    Returns:
        The turns, oldest first.
    """
    if not isinstance(history, Sequence) or isinstance(history, str | bytes):
        return ()
    kept: list[Turn] = []
    for message in reversed(history):
        if len(kept) >= max_turns:
            break
        turn = _to_turn(message, max_chars=max_chars)
        if turn is not None:
            kept.append(turn)
    return tuple(reversed(kept))


def _to_turn(message: object, *, max_chars: int) -> Turn | None:
    if isinstance(message, Mapping):
        role, content, metadata = (message.get(k) for k in ("role", "content", "metadata"))
    else:
        role = getattr(message, "role", None)
        content = getattr(message, "content", None)
        metadata = getattr(message, "metadata", None)
    if isinstance(metadata, Mapping) and metadata.get("title"):
        return None
    text = valid_unicode(_content_text(content, max_chars=max_chars).strip())
    if not text:
        return None
    if role == "user":
        return Turn(role="user", text=text[:max_chars])
    if role == "assistant":
        return Turn(role="assistant", text=text[:max_chars])
    return None


def _content_text(content: object, *, max_chars: int) -> str:
    if isinstance(content, str):
        return content[:max_chars]
    if not isinstance(content, Sequence) or isinstance(content, bytes):
        return ""
    pieces: list[str] = []
    size = 0
    for part in content[:64]:
        if isinstance(part, str):
            text = part
        elif isinstance(part, Mapping) and part.get("type") == "text":
            value = part.get("text")
            text = value if isinstance(value, str) else ""
        else:
            continue
        pieces.append(text[: max_chars - size])
        size += len(pieces[-1])
        if size >= max_chars:
            break
    return "\n".join(pieces)


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
