"""``ask`` keeps the door contract (`tests.session.door_contract`), its command in process."""

from __future__ import annotations

import argparse
import io
from collections.abc import Sequence
from pathlib import Path

from assistant.cli._common import report_error
from assistant.cli.ask import ask_with
from assistant.errors import AssistantError
from assistant.session import Desk
from tests.session.door_contract import AMINA, DoorContract, Reply


class TestAskKeepsTheDoorContract(DoorContract):
    door = "ask"
    streams = False  # it prints the finished answer, or the error
    keeps_history = False  # one question per line, no conversation
    for_operators = True  # whoever runs it reads the index files: the address helps them

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
        args = argparse.Namespace(
            question=question, json=False, k=k, source=list(sources), tag=list(tags)
        )
        out, err = io.StringIO(), io.StringIO()
        try:
            code = ask_with(desk, args, stdin=io.StringIO(), out=out, user=AMINA)
        except AssistantError as exc:
            code = report_error(exc, err)
        return Reply(out.getvalue() + err.getvalue(), status=str(code))


def test_a_refused_question_is_a_usage_error(tmp_path: Path) -> None:
    from tests.session.door_contract import catalogue
    from tests.support.ui_fakes import FakeService

    desk = Desk(FakeService(), catalogue=catalogue)
    door = TestAskKeepsTheDoorContract()
    assert door.ask(desk, "   ", tmp_path=tmp_path).status == "2"
    assert door.ask(desk, "Loans?", k=11, tmp_path=tmp_path).status == "2"
    assert door.ask(desk, "Loans?", tmp_path=tmp_path).status == "0"
