"""Why a question is not answered, as data: every door words a `Problem` its own way.

The session decides once (`assistant.session.desk`); a door turns the kind into its
wording, status code or exit code and never decides again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Problem", "ProblemKind"]

ProblemKind = Literal[
    "empty",  # nothing to ask
    "too long",  # ``length`` characters, over MAX_QUESTION_CHARS
    "bad k",  # ``value`` is not a whole number 1-MAX_K
    "unknown filter",  # ``field`` ("source" or "tag") ``value``; ``close`` the near names
    "ambiguous filter",  # ``value`` is the end of several sources, listed in ``close``
    "no index",  # nothing ingested yet
    "store down",  # the index cannot be read now (its message names hosts: not shown)
    "failed",  # answering failed; ``detail`` is safe to show
]


@dataclass(frozen=True, slots=True)
class Problem:
    """What keeps a question from being answered, and the facts a door words it with.

    ``known`` counts the names a filter value could have been and ``listed`` names the
    first of them, for a value with no close match ("the index has 3 tags: ...").
    """

    kind: ProblemKind
    field: str = ""
    value: str = ""
    close: tuple[str, ...] = ()
    known: int = 0
    listed: tuple[str, ...] = ()
    length: int = 0
    detail: str = ""
