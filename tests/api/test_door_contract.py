"""The API keeps the door contract (`tests.session.door_contract`), its app in process.

Replies stream (SSE) as most clients ask; the whole-reply path is the same desk and turn.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from assistant.api.keys import KeyStore
from assistant.api.server import build_api
from assistant.session import Desk
from tests.session.door_contract import DoorContract, Reply


class TestTheApiKeepsTheDoorContract(DoorContract):
    door = "api"
    shows_banner = False  # the mode is the ``mode`` field; plain clients get the text only

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
        keys = KeyStore(tmp_path / "keys.json")
        secret, _ = keys.add("amina", ("staff",))
        options: dict[str, Any] = {"sources": list(sources), "tags": list(tags)}
        if k is not None:
            options["k"] = k
        messages = [{"role": r, "content": t} for r, t in history]
        body = {
            "messages": [*messages, {"role": "user", "content": question}],
            "stream": True,
            "assistant": options,
        }
        client = TestClient(build_api(desk, keys=keys))
        headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        # ASCII JSON, as the openai library sends it: a lone surrogate travels escaped.
        response = client.post("/v1/chat/completions", content=json.dumps(body), headers=headers)
        if response.status_code != 200:
            error = response.json()["error"]
            return Reply(error["message"], status=f"{response.status_code} {error['code']}")
        return _streamed(response.text)


def _streamed(sse: str) -> Reply:
    text, mode = "", ""
    for line in sse.splitlines():
        if not line.startswith("data: {"):
            continue
        chunk = json.loads(line.removeprefix("data: "))
        for choice in chunk["choices"]:
            text += choice["delta"].get("content", "")
            mode = choice.get("mode", mode) or chunk.get("mode", mode)
    return Reply(text, status="200", mode=mode)


def test_an_unknown_filter_value_is_a_400_naming_it(tmp_path: Path) -> None:
    from tests.session.door_contract import catalogue
    from tests.support.ui_fakes import FakeService

    desk = Desk(FakeService(), catalogue=catalogue)
    reply = TestTheApiKeepsTheDoorContract().ask(
        desk, "Loans?", sources=["gone.md"], tmp_path=tmp_path
    )
    assert reply.status == "400 unknown_filter"
    assert "'gone.md'" in reply.text
