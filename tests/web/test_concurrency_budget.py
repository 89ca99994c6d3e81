"""Looping answers hold their concurrency slots only for the answer budget (D5)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from gradio_client import Client

from tests.support.openai_server import Reply
from tests.support.served_ui import behind_fake_model


def test_four_looping_answers_do_not_block_a_fifth_user_past_the_budget(tmp_path: Path) -> None:
    """D5: at ASSISTANT_CONCURRENCY=4, four endless answers hold their slots only for
    the budget, so a fifth user's question is answered right after it, not never."""

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text("# Leave\n\nStaff get 25 days of annual leave.\n", "utf-8")

    def reply(body: dict[str, Any]) -> Reply:
        if "loop" in json.dumps(body["messages"]):
            return Reply(text="Staff get 25 days [1]. ", endless=True, delay=0.05)
        return Reply(text="Staff get 25 days of annual leave [1].")

    with behind_fake_model(
        tmp_path / "index", docs, handler=reply, ui={"concurrency": 4}, api_key="t", total_timeout=3
    ) as served:
        client = Client(served.url, verbose=False)
        client.predict("annual leave days", [], [], 3, api_name="/chat")  # index loaded
        loops = [client.submit("annual leave loop", [], [], 3, api_name="/chat") for _ in range(4)]
        time.sleep(1.0)
        started = time.monotonic()
        fifth = client.submit("annual leave days", [], [], 3, api_name="/chat")
        result = fifth.result(timeout=30)
        waited = time.monotonic() - started
        for job in loops:
            job.result(timeout=30)
    assert "25 days of annual leave" in json.dumps(result)
    assert waited <= 3 + 3, waited  # one budget (less the head start), plus slack
