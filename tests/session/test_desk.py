"""The desk: one reading of what any door received, into a `Request` or a `Problem`."""

from __future__ import annotations

import pytest

from assistant.config import Settings
from assistant.errors import IndexNotFoundError, LLMError, StoreError
from assistant.session import Desk, Problem, Request, filters_for, problem_of
from assistant.session.filters import resolve_filters, resolve_source, resolve_tag
from assistant.types import MAX_TURNS, SearchFilters, Turn, User
from tests.session.door_contract import AMINA, catalogue
from tests.support.ui_fakes import FakeService

DESK = Desk(FakeService(), settings=Settings(), catalogue=catalogue)


def test_a_request_is_the_question_stripped_with_the_default_k_and_no_filters() -> None:
    asked = DESK.request("  Loans?  ", user=AMINA)
    assert asked == Request("Loans?", (), Settings().retrieval.top_k, SearchFilters(), AMINA)


@pytest.mark.parametrize(
    ("k", "expected"),
    [(3, 3), (3.0, 3), (10, 10), (0, None), (11, None), (2.5, None), (True, None), ("3", None)],
)
def test_k_is_a_whole_number_from_1_to_10_whatever_the_door_sent(
    k: object, expected: int | None
) -> None:
    asked = DESK.request("Loans?", k=k)
    if expected is None:
        assert asked == Problem("bad k", field="k", value=str(k))
    else:
        assert isinstance(asked, Request)
        assert asked.k == expected


def test_a_filter_value_that_is_not_text_is_unknown_by_its_text() -> None:
    assert DESK.request("Loans?", sources=[3]) == Problem(
        "unknown filter", field="source", value="3"
    )


def test_turns_and_messages_are_both_history_capped_to_the_newest() -> None:
    turns = [Turn("user", f"t{n}") for n in range(20)]
    from_turns = DESK.request("Loans?", history=turns)
    from_messages = DESK.request(
        "Loans?", history=[{"role": "user", "content": f"t{n}"} for n in range(20)]
    )
    assert isinstance(from_turns, Request)
    assert isinstance(from_messages, Request)
    assert from_turns.history == from_messages.history == tuple(turns[-MAX_TURNS:])


def test_filters_go_as_given_when_the_catalogue_cannot_be_read() -> None:
    def broken(user: User) -> tuple[list[tuple[str, str]], list[str]]:
        raise IndexNotFoundError("no index yet")

    desk = Desk(FakeService(), catalogue=broken)
    asked = desk.request("Loans?", sources=["any.md"])
    assert isinstance(asked, Request)  # asking will say there is no index
    assert asked.filters.sources == ("any.md",)


def test_the_filter_rule_resolves_names_and_names_what_it_cannot() -> None:
    known = catalogue(AMINA)
    resolved = resolve_filters(SearchFilters(sources=("LEAVE",), tags=("Loans",)), known)
    assert resolved == SearchFilters(sources=("hr/leave.md",), tags=("loans",))
    assert resolve_tag("travl", ["travel"]) == Problem(
        "unknown filter", field="tag", value="travl", close=("travel",), known=1
    )
    lone = resolve_source("zzz", ["a.md", "b.md"])
    assert lone == Problem(
        "unknown filter", field="source", value="zzz", known=2, listed=("a.md", "b.md")
    )


def test_the_search_command_resolves_through_the_same_rule() -> None:
    # A searcher that cannot list its index (a fake) leaves the filters as given.
    given = SearchFilters(sources=("x.md",))
    assert filters_for(FakeService(), given, AMINA) == given  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (IndexNotFoundError("no index at /srv/idx"), "no index"),
        (StoreError("cannot open http://10.1.2.3:8026"), "store down"),
        (LLMError("the model refused (401)"), "failed"),
    ],
)
def test_an_error_of_the_core_is_one_problem_for_every_door(error: Exception, kind: str) -> None:
    problem = problem_of(error)  # type: ignore[arg-type]
    assert (problem.kind, problem.value, problem.detail) == (kind, type(error).__name__, str(error))


def test_asking_turns_a_missing_index_into_a_problem_not_an_exception() -> None:
    desk = Desk(FakeService(raise_on_ask=IndexNotFoundError("none")))
    asked = desk.request("Loans?")
    assert isinstance(asked, Request)
    problem = desk.ask(asked, door="test")
    assert isinstance(problem, Problem)
    assert problem.kind == "no index"
