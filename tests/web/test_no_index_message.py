"""Without an index the chat says how to build one and that the next question will use it (D15)."""

from __future__ import annotations

from assistant.config import Settings
from assistant.errors import IndexNotFoundError
from assistant.session import Desk
from assistant.web.ui import make_responder
from tests.support.ui_fakes import FakeService


def test_the_no_index_message_does_not_ask_for_a_restart() -> None:
    """D15: the chat picks up a new index on the next question, and says so."""
    service = FakeService(raise_on_ask=IndexNotFoundError("no collection"))
    respond = make_responder(Desk(service, settings=Settings()))
    (messages,) = list(respond("anything?", []))
    text = str(messages[0].content)
    assert "python ingest.py" in text
    assert "restart the UI" not in text
    assert "next question" in text
