"""A store that cannot be reached: the chat says so plainly, never its address (issue 28, D12).

The answering from memory while a Chroma server is down is checked end to end in
tests/index/test_data_safety.py (case 2); here, what a user reads when even that fails.
"""

from __future__ import annotations

from typing import Any

from assistant.config import Settings
from assistant.errors import StoreError
from assistant.session import Desk
from assistant.web.ui import make_responder

INTERNAL = "cannot open the index (Chroma server http://10.1.2.3:8026): Connection refused"


class _DownService:
    def ask(self, *args: Any, **kwargs: Any) -> Any:
        raise StoreError(INTERNAL)


def test_a_store_failure_is_said_plainly_without_the_stores_address() -> None:
    respond = make_responder(Desk(_DownService(), settings=Settings()))
    *_, final = respond("What is the emergency loan rate?", [], [], [], 3)
    shown = " ".join(str(message.content) for message in final)
    assert "cannot be reached right now" in shown
    assert "10.1.2.3" not in shown
    assert "8026" not in shown
    assert "http" not in shown
