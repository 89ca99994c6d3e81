"""The chat keeps the door contract (`tests.session.door_contract`), its responder in process."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from assistant.session import Desk
from assistant.users import load_directory
from assistant.web.feedback import ChatAudit
from assistant.web.ui import make_responder
from tests.session.door_contract import DoorContract, Reply


class _LoggedIn:
    """What Gradio hands the responder for a logged-in user's request."""

    username = "amina"
    client = None
    headers: ClassVar[dict[str, str]] = {}


class TestTheChatKeepsTheDoorContract(DoorContract):
    door = "ui"

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
        directory = load_directory(None, auth_pairs=(("amina", "pw"),), trusted_proxies=())
        audit = ChatAudit(desk.log) if desk.log else None
        respond = make_responder(desk, directory=directory, audit=audit)
        messages: list[dict[str, Any]] = [{"role": r, "content": t} for r, t in history]
        slider = None if k is None else float(k)  # the slider sends floats
        *_, final = respond(question, messages, list(sources), list(tags), slider, _LoggedIn())
        return Reply("\n\n".join(str(message.content) for message in final))
