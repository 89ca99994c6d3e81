"""One turn, whatever the door: deltas, then one frozen outcome, recorded once at finish."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from assistant.audit.log import AuditLog
from assistant.session.turn import Delta, Finished, TurnAudit, start_turn
from assistant.types import SearchFilters, User
from tests.support.ui_fakes import FakeService

AMINA = User("amina", frozenset({"staff"}))


def test_a_turn_streams_then_finishes_into_one_outcome_recorded_once(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.sqlite3")
    audit = TurnAudit(log, door="test")
    turn = start_turn(
        FakeService(), "Loans?", k=3, filters=SearchFilters(), user=AMINA, audit=audit
    )
    assert turn.result.hits  # retrieval ran before the first delta
    *deltas, last = list(turn)
    turn.close()
    assert isinstance(last, Finished)
    outcome = last.outcome
    assert turn.finish() is outcome  # finishing again records nothing more
    assert outcome.streamed == "".join(d.text for d in deltas if isinstance(d, Delta))
    assert outcome.shown == "Emergency loans cost 12% a year [1]."
    assert [c.number for c in outcome.answer.citations] == [1]
    assert outcome.record_id
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.shown = "changed"  # type: ignore[misc]
    assert log.flush()
    records = [record for record, _ in log.store.records()]
    log.close()
    assert [(r.record_id, r.user, r.question) for r in records] == [
        (outcome.record_id, "amina", "Loans?")
    ]
    assert dict(records[0].timings_ms)["test total"] == round(outcome.door_timings()["total"], 1)


def test_a_turn_without_an_audit_log_records_nothing() -> None:
    outcome = start_turn(FakeService(), "Loans?", k=None, filters=SearchFilters(), user=AMINA).run()
    assert outcome.record_id == ""
    assert outcome.shown.startswith("Emergency loans")


def test_the_filters_reach_the_service_as_given() -> None:
    service = FakeService()
    start_turn(service, "Loans?", k=2, filters=SearchFilters(), user=AMINA).run()
    wanted = SearchFilters(sources=("loans.md",))
    start_turn(service, "Loans?", k=2, filters=wanted, user=AMINA).run()
    assert [call.filters for call in service.calls] == [SearchFilters(), wanted]
