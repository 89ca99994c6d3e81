"""Filter values as a user gives them, resolved against what this user may see.

A user types the file name (``leave-policy.md``), the index stores the path under the
ingested folder (``hr/leave-policy.md``): a name that is the end of exactly one stored
path (at a ``/``), with or without its extension, means that path; a tag matches
ignoring case when that leaves one. Anything else is a `Problem` naming the value and
its close matches, whichever door it came through, rather than a search that silently
finds nothing. A document the user may not read is as unknown as one never indexed.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Collection, Sequence
from dataclasses import replace
from pathlib import PurePosixPath

from assistant.session.problem import Problem
from assistant.types import SearchFilters

__all__ = ["Catalogue", "close_matches", "resolve_filters", "resolve_source", "resolve_tag"]

logger = logging.getLogger(__name__)

# The ``(source, title)`` pairs and the tags one user may see.
Catalogue = tuple[Sequence[tuple[str, str]], Sequence[str]]
LISTED = 12  # a value with no close match lists the first this many names


def resolve_filters(filters: SearchFilters, catalogue: Catalogue) -> SearchFilters | Problem:
    """Return ``filters`` with each source and tag replaced by the one the catalogue holds."""
    named, tags = catalogue
    sources = [source for source, _ in named]
    resolved_sources = []
    for typed in filters.sources:
        source = resolve_source(typed, sources)
        if isinstance(source, Problem):
            return source
        resolved_sources.append(source)
    resolved_tags = []
    for typed in filters.tags:
        tag = resolve_tag(typed, tags)
        if isinstance(tag, Problem):
            return tag
        resolved_tags.append(tag)
    return replace(filters, sources=tuple(resolved_sources), tags=tuple(resolved_tags))


def resolve_source(typed: object, sources: Collection[str]) -> str | Problem:
    """Return the stored source ``typed`` names: itself, or the one path it is the end of."""
    if not isinstance(typed, str):
        return Problem("unknown filter", field="source", value=str(typed), known=len(sources))
    if typed in sources:
        return typed
    wanted = typed.strip().strip("/").casefold()
    fits = sorted(s for s in sources if wanted and _ends_with(s, wanted))
    if len(fits) == 1:
        logger.info("source %s means %s", typed, fits[0])
        return fits[0]
    if fits:
        return Problem("ambiguous filter", field="source", value=typed, close=tuple(fits))
    return _unknown("source", typed, sources)


def resolve_tag(typed: object, tags: Collection[str]) -> str | Problem:
    """Return the tag ``typed`` names, ignoring case when that leaves one."""
    if not isinstance(typed, str):
        return Problem("unknown filter", field="tag", value=str(typed), known=len(tags))
    if typed in tags:
        return typed
    fits = [t for t in tags if t.casefold() == typed.strip().casefold()]
    if len(fits) == 1:
        return fits[0]
    return _unknown("tag", typed, tags)


def _unknown(field: str, typed: str, known: Collection[str]) -> Problem:
    close = close_matches(typed, known)
    listed = () if close else tuple(sorted(known)[:LISTED])
    return Problem(
        "unknown filter", field=field, value=typed, close=close, known=len(known), listed=listed
    )


def _ends_with(source: str, wanted: str) -> bool:
    path = source.casefold()
    stem = str(PurePosixPath(path).with_suffix("")) if PurePosixPath(path).suffix else path
    return any(p == wanted or p.endswith("/" + wanted) for p in (path, stem))


def close_matches(typed: str, known: Collection[str]) -> tuple[str, ...]:
    """Return up to three known names close to ``typed`` (whole path or file name)."""
    by_name = {PurePosixPath(k).name.casefold(): k for k in known}
    lowered = {k.casefold(): k for k in known}
    wanted = typed.strip().casefold()
    close = [lowered[m] for m in difflib.get_close_matches(wanted, lowered, n=3, cutoff=0.6)]
    close += [by_name[m] for m in difflib.get_close_matches(wanted, by_name, n=3, cutoff=0.6)]
    return tuple(dict.fromkeys(close))[:3]
