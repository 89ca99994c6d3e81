"""A `Problem` of the session in the command line's words: a usage error or a failure.

The rules (which question, ``k`` and filter value may be asked) are the session's
(`assistant.session`); here they read as the command line has always put them, with
close matches for a filter value the index does not hold.
"""

from __future__ import annotations

from collections.abc import Iterable

from assistant.errors import AssistantError, ConfigError, IndexNotFoundError, StoreError
from assistant.session import MAX_K, MAX_QUESTION_CHARS, Problem

__all__ = ["problem_error"]


def problem_error(problem: Problem) -> AssistantError:
    """Return the error a command raises for ``problem`` (`report_error` gives its exit code)."""
    if problem.kind == "no index":
        advice = "" if "ingest" in problem.detail else ": run `python ingest.py` first"
        return IndexNotFoundError(problem.detail + advice)
    if problem.kind == "store down":
        return StoreError(problem.detail)
    if problem.kind == "failed":
        return AssistantError(problem.detail)
    return ConfigError(_usage(problem))


def _usage(problem: Problem) -> str:
    flag = f"--{problem.field}"
    if problem.kind == "empty":
        return "give a question (this one is empty), or --json without one"
    if problem.kind == "too long":
        limit = f"{MAX_QUESTION_CHARS:,}"
        return f"the question is {problem.length:,} characters long; the limit is {limit}"
    if problem.kind == "bad k":
        return f"-k must be a whole number from 1 to {MAX_K}, got {problem.value}"
    if problem.kind == "ambiguous filter":
        return (
            f"{flag} {problem.value!r} fits several documents: {_listing(problem.close)}; "
            "give the path as listed"
        )
    noun = "document" if problem.field == "source" else "tag"
    return f"no {noun} {problem.value!r} in the index; {_hint(problem)}"


def _hint(problem: Problem) -> str:
    kind = "documents" if problem.field == "source" else "tags"
    if problem.close:
        return f"did you mean {_listing(problem.close, joiner=' or ')}?"
    if not problem.known:
        return f"the index has no {kind}"
    more = problem.known - len(problem.listed)
    tail = f" and {more} more" if more > 0 else ""
    return f"the index has {problem.known} {kind}: {_listing(problem.listed)}{tail}"


def _listing(names: Iterable[str], *, joiner: str = ", ") -> str:
    return joiner.join(repr(n) for n in names)
