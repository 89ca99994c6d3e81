"""A lone surrogate sent to the chat's API reaches the service as valid Unicode (D11)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from assistant.config import Settings, UISettings
from assistant.session import Desk
from assistant.web.ui import build_demo
from tests.conftest import free_port
from tests.support.served_ui import demo_launched
from tests.support.ui_fakes import FakeService


def test_a_lone_surrogate_in_a_ui_question_reaches_the_service_as_valid_unicode() -> None:
    """D11: a raw API call with ``"\\ud800"`` is answered, and no surrogate reaches the service."""
    service = FakeService()
    settings = Settings(ui=UISettings(port=free_port()))
    demo = build_demo(Desk(service, settings=settings), sources=[("loan-policy.md", "Loan Policy")])
    with demo_launched(demo, settings) as url:
        events = call_chat(url, ["loan \ud800 rate", [], [], 3])
    assert "event: complete" in events
    (call,) = service.calls
    call.question.encode("utf-8")
    assert call.question == "loan \ufffd rate"


def call_chat(url: str, data: list[object]) -> str:
    """POST to Gradio's ``/call/chat`` with ASCII-escaped JSON; return the event stream."""
    body = json.dumps({"data": data}).encode("ascii")
    request = urllib.request.Request(
        url + "/gradio_api/call/chat", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        event_id = json.load(response)["event_id"]
    with urllib.request.urlopen(url + f"/gradio_api/call/chat/{event_id}", timeout=60) as stream:
        return str(stream.read().decode("utf-8"))
