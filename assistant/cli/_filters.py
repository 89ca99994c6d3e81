"""``--source`` and ``--tag`` as a user types them, resolved against what the index holds.

A user types the file name (``leave-policy.md``), the index stores the path under the
ingested folder (``hr/leave-policy.md``): a name that is the end of exactly one stored
path (at a ``/``), with or without its extension, means that path. A name that fits no
source, or several, and a tag the index does not know, is a usage error naming close
matches, rather than a search that silently finds nothing.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Collection, Iterable
from dataclasses import replace
from pathlib import PurePosixPath

from assistant.errors import ConfigError
from assistant.protocols import Searcher
from assistant.types import SearchFilters

__all__ = ["resolve_filters", "resolve_source", "resolve_tag"]

logger = logging.getLogger(__name__)

_LISTED = 12  # an error with no close match lists the first this many sources or tags


def resolve_filters(filters: SearchFilters, searcher: Searcher) -> SearchFilters:
    """Return ``filters`` with each source and tag replaced by the one the index holds.

    A searcher that cannot list its index (a test fake), or an index that cannot be read
    yet, leaves the filters as they are: the search itself then reports the missing index
    (per line, in ``--json`` mode).

    Raises:
        ConfigError: A source or tag the index does not hold, or a name that fits several
            sources; the message names close matches.
    """
    if not (filters.sources or filters.tags):
        return filters
    from assistant.session.stack import searcher_catalog

    # Names and suggestions come only from documents this user may read.
    catalog = searcher_catalog(searcher)
    if catalog is None:
        return filters
    named, tags = catalog
    sources = [source for source, _ in named]
    return replace(
        filters,
        sources=tuple(resolve_source(s, sources) for s in filters.sources),
        tags=tuple(resolve_tag(t, tags) for t in filters.tags),
    )


def resolve_source(typed: str, sources: Collection[str]) -> str:
    """Return the stored source ``typed`` names: itself, or the one path it is the end of.

    Raises:
        ConfigError: No source or several fit; the message names close matches.
    """
    if typed in sources:
        return typed
    wanted = typed.strip().strip("/").casefold()
    fits = [s for s in sources if wanted and _ends_with(s, wanted)]
    if len(fits) == 1:
        logger.info("--source %s means %s", typed, fits[0])
        return fits[0]
    if fits:
        raise ConfigError(
            f"--source {typed!r} fits several documents: {_listing(sorted(fits))}; "
            "give the path as listed"
        )
    raise ConfigError(f"no document {typed!r} in the index; {_hint(typed, sources, 'documents')}")


def resolve_tag(typed: str, tags: Collection[str]) -> str:
    """Return the tag ``typed`` names, ignoring case when that leaves one.

    Raises:
        ConfigError: The index holds no such tag; the message names close matches.
    """
    if typed in tags:
        return typed
    fits = [t for t in tags if t.casefold() == typed.strip().casefold()]
    if len(fits) == 1:
        return fits[0]
    raise ConfigError(f"no tag {typed!r} in the index; {_hint(typed, tags, 'tags')}")


def _ends_with(source: str, wanted: str) -> bool:
    path = source.casefold()
    stem = str(PurePosixPath(path).with_suffix("")) if PurePosixPath(path).suffix else path
    return any(p == wanted or p.endswith("/" + wanted) for p in (path, stem))


def _hint(typed: str, known: Collection[str], kind: str) -> str:
    if not known:
        return f"the index has no {kind}"
    by_name = {PurePosixPath(k).name.casefold(): k for k in known}
    lowered = {k.casefold(): k for k in known}
    wanted = typed.strip().casefold()
    close = [lowered[m] for m in difflib.get_close_matches(wanted, lowered, n=3, cutoff=0.6)]
    close += [by_name[m] for m in difflib.get_close_matches(wanted, by_name, n=3, cutoff=0.6)]
    close = list(dict.fromkeys(close))[:3]
    if close:
        return f"did you mean {_listing(close, joiner=' or ')}?"
    shown = sorted(known)[:_LISTED]
    more = f" and {len(known) - len(shown)} more" if len(known) > len(shown) else ""
    return f"the index has {len(known)} {kind}: {_listing(shown)}{more}"


def _listing(names: Iterable[str], *, joiner: str = ", ") -> str:
    return joiner.join(repr(n) for n in names)
