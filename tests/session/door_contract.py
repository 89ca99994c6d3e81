"""The door contract, written once: what every door (chat, API, ``ask``) does with a question.

Each door's tests subclass `DoorContract` (``tests/web/test_door_contract.py``,
``tests/api/test_door_contract.py``, ``tests/cli/test_door_contract.py``) and give one
in-process `DoorContract.ask`: the question through the door's own code, its reply as the
user reads it. The desk is real (real filter rules, a real audit log on SQLite); the
service is the scripted `FakeService`, so a rule is checked at the door, not in retrieval.
A door that does something only it can (SSE framing, workers, 429) keeps its own tests.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from assistant.audit.log import AuditLog
from assistant.config import Settings
from assistant.errors import IndexNotFoundError, StoreError
from assistant.session import MAX_K, MAX_QUESTION_CHARS, Catalogue, Desk
from assistant.types import MAX_TURNS, AuditRecord, User
from tests.support.ui_fakes import FakeService

# The asker every rule uses: staff may read the loan policy and the leave policy, not
# the salaries (the catalogue below is what a desk shows each user).
AMINA = User("amina", frozenset({"staff"}))
STORE_ADDRESS = "http://10.1.2.3:8026"
BANNER = "Quoted passages (offline):"


def catalogue(user: User) -> Catalogue:
    """Return the documents and tags ``user`` may filter on."""
    sources = [("hr/leave.md", "Leave Policy"), ("loan-policy.md", "Loan Policy")]
    if user.is_admin or "hr" in user.groups:
        sources.append(("hr/salaries.md", "Salaries"))
    return sources, ["leave", "loans"]


@dataclass(frozen=True, slots=True)
class Reply:
    """What a door answered, as its user reads it: the text, and the door's status."""

    text: str
    status: str = ""
    mode: str = ""


class DoorContract:
    """The rules each door keeps; a subclass gives `ask` and its three traits."""

    door: ClassVar[str]  # the name the audit record's timings carry ("ui", "api", "ask")
    streams: ClassVar[bool] = True  # a failure mid-stream keeps the partial answer
    keeps_history: ClassVar[bool] = True  # the conversation reaches the service
    shows_banner: ClassVar[bool] = True  # the offline label is part of what it shows
    for_operators: ClassVar[bool] = False  # its user runs the machine (D12 hides hosts from users)

    def ask(
        self,
        desk: Desk,
        question: str,
        *,
        k: int | None = None,
        sources: Sequence[str] = (),
        tags: Sequence[str] = (),
        history: Sequence[tuple[str, str]] = (),
        tmp_path: Path,
    ) -> Reply:
        """Send ``question`` through the door as AMINA; return the reply she reads."""
        raise NotImplementedError

    @pytest.fixture
    def service(self) -> FakeService:
        return FakeService()

    @pytest.fixture
    def log(self, tmp_path: Path) -> Iterator[AuditLog]:
        log = AuditLog(tmp_path / "audit.sqlite3")
        yield log
        log.close()

    @pytest.fixture
    def desk(self, service: FakeService, log: AuditLog) -> Desk:
        return Desk(service, settings=Settings(), catalogue=catalogue, log=log)

    def records(self, log: AuditLog) -> list[AuditRecord]:
        assert log.flush()
        return [record for record, _ in log.store.records()]

    # 1-3: the question --------------------------------------------------------------

    def test_a_blank_question_is_refused_and_nothing_searched(
        self, desk: Desk, service: FakeService, tmp_path: Path
    ) -> None:
        reply = self.ask(desk, "   ", tmp_path=tmp_path)
        assert reply.text.strip()
        assert service.calls == []

    def test_an_over_long_question_is_refused_naming_the_limit(
        self, desk: Desk, service: FakeService, tmp_path: Path
    ) -> None:
        reply = self.ask(desk, "x" * (MAX_QUESTION_CHARS + 1), tmp_path=tmp_path)
        assert f"{MAX_QUESTION_CHARS:,}" in reply.text
        assert service.calls == []

    def test_the_answer_reaches_the_user_and_the_question_the_service(
        self, desk: Desk, service: FakeService, tmp_path: Path
    ) -> None:
        reply = self.ask(desk, "  What do emergency loans cost?  ", tmp_path=tmp_path)
        assert "12%" in reply.text
        assert [call.question for call in service.calls] == ["What do emergency loans cost?"]

    def test_a_question_is_asked_as_valid_unicode(
        self, desk: Desk, service: FakeService, tmp_path: Path
    ) -> None:
        self.ask(desk, "Loans \ud800?", tmp_path=tmp_path)  # a lone surrogate, as a client sent
        assert [call.question for call in service.calls] == ["Loans \ufffd?"]

    # 4-6: k -------------------------------------------------------------------------

    @pytest.mark.parametrize("k", [0, MAX_K + 1])
    def test_k_out_of_range_is_refused_naming_the_range(
        self, desk: Desk, service: FakeService, tmp_path: Path, k: int
    ) -> None:
        reply = self.ask(desk, "Loans?", k=k, tmp_path=tmp_path)
        assert str(MAX_K) in reply.text
        assert service.calls == []

    def test_k_in_range_reaches_the_service_and_none_means_the_default(
        self, desk: Desk, service: FakeService, tmp_path: Path
    ) -> None:
        self.ask(desk, "Loans?", k=MAX_K, tmp_path=tmp_path)
        self.ask(desk, "Loans?", tmp_path=tmp_path)
        assert [call.k for call in service.calls] == [MAX_K, Settings().retrieval.top_k]

    # 7-10: filters ------------------------------------------------------------------

    def test_an_unknown_source_is_refused_by_name_with_a_close_match(
        self, desk: Desk, service: FakeService, tmp_path: Path
    ) -> None:
        reply = self.ask(desk, "Loans?", sources=["loan-polcy.md"], tmp_path=tmp_path)
        assert "loan-polcy.md" in reply.text
        assert "loan-policy.md" in reply.text  # the close match
        assert service.calls == []

    def test_an_unknown_tag_is_refused_by_name(
        self, desk: Desk, service: FakeService, tmp_path: Path
    ) -> None:
        reply = self.ask(desk, "Loans?", tags=["travel"], tmp_path=tmp_path)
        assert "travel" in reply.text
        assert service.calls == []

    def test_a_document_the_user_may_not_read_is_as_unknown_as_one_never_indexed(
        self, desk: Desk, service: FakeService, tmp_path: Path
    ) -> None:
        reply = self.ask(desk, "Pay?", sources=["salaries"], tmp_path=tmp_path)
        assert "salaries" in reply.text
        assert "hr/salaries.md" not in reply.text  # not even suggested
        assert service.calls == []

    def test_a_file_name_means_the_one_stored_path_it_ends(
        self, desk: Desk, service: FakeService, tmp_path: Path
    ) -> None:
        self.ask(desk, "Leave?", sources=["leave.md"], tags=["LOANS"], tmp_path=tmp_path)
        (call,) = service.calls
        assert call.filters is not None
        assert (call.filters.sources, call.filters.tags) == (("hr/leave.md",), ("loans",))

    # 11-13: when the core cannot answer ---------------------------------------------

    def test_no_index_says_to_ingest(self, service: FakeService, tmp_path: Path) -> None:
        service.raise_on_ask = IndexNotFoundError("no collection 'policies'")
        reply = self.ask(Desk(service, catalogue=catalogue), "Loans?", tmp_path=tmp_path)
        assert "ingest" in reply.text

    def test_a_store_that_is_down_is_said_without_its_address(
        self, service: FakeService, tmp_path: Path
    ) -> None:
        service.raise_on_ask = StoreError(f"cannot open the index ({STORE_ADDRESS}): refused")
        reply = self.ask(Desk(service, catalogue=catalogue), "Loans?", tmp_path=tmp_path)
        assert reply.text.strip()
        assert ("10.1.2.3" in reply.text) == self.for_operators

    def test_a_failure_mid_stream_records_nothing_and_keeps_what_streamed(
        self, desk: Desk, service: FakeService, log: AuditLog, tmp_path: Path
    ) -> None:
        service.fail_after = 2
        reply = self.ask(desk, "Loans?", tmp_path=tmp_path)
        assert self.records(log) == []
        if self.streams:
            assert "Emergency loans cost 12% a year" in reply.text

    # 14-16: the conversation, the record, the banner --------------------------------

    def test_only_the_newest_turns_reach_the_service(
        self, desk: Desk, service: FakeService, tmp_path: Path
    ) -> None:
        if not self.keeps_history:
            pytest.skip("this door takes one question at a time, with no conversation")
        history = [("user" if n % 2 == 0 else "assistant", f"turn {n}") for n in range(30)]
        self.ask(desk, "Loans?", history=history, tmp_path=tmp_path)
        (call,) = service.calls
        assert [turn.text for turn in call.history] == [f"turn {n}" for n in range(18, 30)]
        assert len(call.history) == MAX_TURNS

    def test_one_audit_record_per_answer_under_the_door_and_the_user(
        self, desk: Desk, log: AuditLog, tmp_path: Path
    ) -> None:
        self.ask(desk, "What do emergency loans cost?", tmp_path=tmp_path)
        self.ask(desk, "   ", tmp_path=tmp_path)  # refused: no record
        (record,) = self.records(log)
        assert (record.user, record.question) == ("amina", "What do emergency loans cost?")
        assert "12%" in record.answer
        assert f"{self.door} total" in dict(record.timings_ms)

    def test_the_offline_label_is_data_the_door_shows_or_leaves_out(
        self, desk: Desk, service: FakeService, log: AuditLog, tmp_path: Path
    ) -> None:
        service.banner = BANNER
        reply = self.ask(desk, "Loans?", tmp_path=tmp_path)
        assert "12%" in reply.text
        assert (BANNER in reply.text) == self.shows_banner
        (record,) = self.records(log)
        assert record.answer.startswith(BANNER)  # the record keeps what was shown
