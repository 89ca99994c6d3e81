"""An API worker killed with SIGKILL under a steady question load (round three, own faults):
the other worker answers, the supervisor starts a new worker, and questions keep working.

A real ``python -m assistant serve --api --workers 2`` over a real index; questions are
posted back to back from a thread while one worker process is killed.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.api.test_openai_api import ApiServer, _environ
from tests.conftest import run_ingest
from tests.support.tiny_corpus import TINY_CORPUS, write_docs

pytestmark = [pytest.mark.server, pytest.mark.slow]

BODY = {"model": "policies", "messages": [{"role": "user", "content": "How many days of leave?"}]}


def _workers(server: ApiServer) -> set[int]:
    """Return the worker processes of ``server`` (children running a spawned Python)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == server.process.pid and b"spawn_main" in command:
            found.add(int(entry.name))
    return found


def test_a_worker_killed_under_questions_is_replaced_and_questions_keep_working(
    tmp_path: Path,
) -> None:
    docs = write_docs(tmp_path / "docs", TINY_CORPUS)
    index = tmp_path / "index"
    assert run_ingest(str(docs), "--index", str(index), env=_environ()).returncode == 0
    server = ApiServer(
        "--index",
        str(index),
        "--workers",
        "2",
        "--keys",
        str(tmp_path / "no-keys.json"),
        "--api-allow-anonymous-loopback",
    )
    codes: list[int] = []
    stop = threading.Event()

    def ask() -> None:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            while not stop.is_set():
                try:
                    codes.append(client.post("/v1/chat/completions", json=BODY).status_code)
                except httpx.HTTPError:
                    codes.append(0)  # the request the killed worker held

    asking = threading.Thread(target=ask, daemon=True)
    try:
        deadline = time.monotonic() + 120
        while len(_workers(server)) < 2:
            assert time.monotonic() < deadline, "two workers never showed"
            time.sleep(0.2)
        before = _workers(server)
        asking.start()
        while len(codes) < 3:
            assert time.monotonic() < deadline, "no answers before the kill"
            time.sleep(0.05)
        victim = min(before)
        os.kill(victim, signal.SIGKILL)
        killed_at = len(codes)
        deadline = time.monotonic() + 120
        while len(_workers(server) - before) < 1 or len(codes) < killed_at + 10:
            assert time.monotonic() < deadline, (_workers(server), codes[killed_at:])
            time.sleep(0.1)
    finally:
        stop.set()
        asking.join(timeout=60)
        server.stop()

    assert all(code == 200 for code in codes[: killed_at - 1]), codes[:killed_at]
    assert codes[killed_at:].count(0) <= 1, codes[killed_at:]  # at most the one in flight
    assert all(code == 200 for code in codes[-5:]), codes[-10:]
