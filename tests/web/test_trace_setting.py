"""Issue 30 (1): the retrieval Trace is for administrators unless ASSISTANT_TRACE=everyone."""

from __future__ import annotations

import pytest

from assistant.config import Settings, UISettings
from assistant.errors import ConfigError
from assistant.session import Desk
from assistant.web.turn import make_responder
from tests.support.ui_fakes import FakeService


def _titles(settings: Settings) -> list[str]:
    respond = make_responder(Desk(FakeService(), settings=settings))
    final = list(respond("Loans?", []))[-1]
    return [str((m.metadata or {}).get("title", "")) for m in final]


def test_staff_get_no_trace_by_default() -> None:
    titles = _titles(Settings())
    assert "Trace" not in titles
    assert any(title.startswith("1 source") or title == "Sources" for title in titles)


def test_everyone_gets_the_trace_when_the_setting_says_so() -> None:
    assert _titles(Settings(ui=UISettings(trace="everyone")))[-1] == "Trace"


def test_the_setting_is_read_from_the_environment_and_checked() -> None:
    assert Settings.from_env({"ASSISTANT_TRACE": "Everyone"}).ui.trace == "everyone"
    assert Settings.from_env({}).ui.trace == "admins"
    with pytest.raises(ConfigError, match="ASSISTANT_TRACE"):
        Settings.from_env({"ASSISTANT_TRACE": "all"})
