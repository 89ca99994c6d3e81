"""Hand-built hits for the answering tests (no index needed)."""

from __future__ import annotations

from assistant.types import Chunk, Hit


def make_hit(
    rank: int,
    body: str,
    *,
    source: str = "leave.md",
    heading_path: tuple[str, ...] = ("Leave Policy", "Annual leave"),
    title: str = "Leave Policy",
    section_text: str | None = None,
    page: int = 0,
    effective_date: str = "2024-01-01",
    score: float = 0.8,
    anchor: str = "",
) -> Hit:
    """Return a hit whose section text defaults to its body."""
    chunk = Chunk(
        chunk_id=f"{source}#{rank}",
        source=source,
        ordinal=rank,
        heading_path=heading_path,
        anchor=anchor or heading_path[-1].lower().replace(" ", "-"),
        text="\n\n".join((" > ".join(heading_path), body)),
        body=body,
        prefix="",
        char_start=0,
        char_end=len(body),
        start_line=0,
        end_line=body.count("\n") + 1,
        section_start=0,
        section_end=len(body),
        page=page,
        token_count=len(body.split()),
    )
    return Hit(
        chunk=chunk,
        rank=rank,
        score=score,
        title=title,
        effective_date=effective_date,
        section_text=body if section_text is None else section_text,
    )
