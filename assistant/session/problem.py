"""Why a question is not answered, as data: every door words a `Problem` its own way.

The session decides once (`assistant.session.desk`); a door turns the kind into its
wording, status code or exit code and never decides again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from assistant.errors import AssistantError, IndexNotFoundError, StoreError

__all__ = ["Problem", "ProblemKind", "problem_of"]

logger = logging.getLogger(__name__)

MAX_DETAIL_CHARS = 300

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


def problem_of(exc: AssistantError) -> Problem:
    """Return the `Problem` an error of the core is, for every door the same.

    ``detail`` is the error's message, for the operator: a store's names its host or
    path (D12), so a door for users shows it only for a plain failure; ``value`` names
    the error's type.
    """
    detail = str(exc).strip() or type(exc).__name__
    if len(detail) > MAX_DETAIL_CHARS:
        detail = detail[:MAX_DETAIL_CHARS] + "…"
    kind: ProblemKind = "failed"
    if isinstance(exc, IndexNotFoundError):
        kind = "no index"
    elif isinstance(exc, StoreError):
        kind = "store down"
    logger.warning("cannot answer (%s): %s", kind, exc, exc_info=kind == "failed")
    return Problem(kind, value=type(exc).__name__, detail=detail)
