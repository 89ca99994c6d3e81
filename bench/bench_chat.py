"""Time to first streamed token through the real UI stack, alone and with 8 users.

Each question goes through gradio_client -> Gradio queue -> assistant (rewrite,
hybrid retrieval, prompt) -> FakeOpenAIServer (answers instantly) -> back as the
first non-empty streamed chat message. Prints p50/p95/max in milliseconds.

    python bench/bench_chat.py                 # temp index of data/policies, fake embedder
    python bench/bench_chat.py --index index   # an existing index, real embedding model

Targets: single-user p95 < 100 ms; with 8 concurrent users no first token
later than 1.5 x single-user p95 + the model server's delay (0 here).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import httpx  # noqa: E402
from gradio_client import Client  # noqa: E402

from assistant.config import LLMSettings, Settings, StoreSettings, UISettings  # noqa: E402
from assistant.protocols import Embedder  # noqa: E402
from assistant.web.app import build_app  # noqa: E402
from tests.support.openai_server import FakeOpenAIServer, Reply  # noqa: E402

TOPICS = (
    "emergency loan interest rate",
    "annual leave entitlement",
    "penalty for early loan repayment",
    "number of guarantors for a development loan",
    "processing fee on loans",
    "sick leave with a doctor's note",
    "travel expense claims",
    "whistleblowing protections",
    "complaints escalation",
    "data retention period for member records",
)
FORMS = (
    "What is the {}?",
    "Tell me about the {}.",
    "Explain the {} rules.",
    "How does the policy handle the {}?",
    "Summarise the {}.",
)
QUESTIONS = tuple(form.format(topic) for form in FORMS for topic in TOPICS)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class GradioUser:
    """One user on gradio_client (its own session)."""

    def __init__(self, url: str) -> None:
        self._client = Client(url, verbose=False)

    def first_token_ms(self, question: str) -> float:
        """Return ms from submitting ``question`` to the first non-empty answer text."""
        started = time.perf_counter()
        job = self._client.submit(question, [], [], 4, api_name="/chat")
        first = 0.0
        for update in job:
            if not first and update and update[0].get("content"):
                first = (time.perf_counter() - started) * 1000
        return first or (time.perf_counter() - started) * 1000


class HttpUser:
    """One user on Gradio's documented HTTP API (POST /call, then the SSE stream)."""

    def __init__(self, url: str) -> None:
        self._http = httpx.Client(base_url=url, timeout=30)

    def first_token_ms(self, question: str) -> float:
        """Return ms from submitting ``question`` to the first SSE event with answer text."""
        started = time.perf_counter()
        posted = self._http.post("gradio_api/call/chat", json={"data": [question, [], [], 4]})
        event_id = posted.json()["event_id"]
        first = 0.0
        with self._http.stream("GET", f"gradio_api/call/chat/{event_id}") as response:
            for line in response.iter_lines():
                if not first and line.startswith("data:") and _has_text(line[5:]):
                    first = (time.perf_counter() - started) * 1000
        return first or (time.perf_counter() - started) * 1000


def _has_text(payload: str) -> bool:
    try:
        data = json.loads(payload)
    except ValueError:
        return False
    return bool(data and isinstance(data, list) and data[0] and data[0][0].get("content"))


def _summary(label: str, samples: Sequence[float]) -> float:
    ordered = sorted(samples)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    print(
        f"{label:<28} n={len(ordered):<4} p50={statistics.median(ordered):7.1f} ms  "
        f"p95={p95:7.1f} ms  max={ordered[-1]:7.1f} ms"
    )
    return p95


def _concurrent(
    make: type[GradioUser | HttpUser], url: str, *, users: int, per_user: int
) -> list[float]:
    clients = [make(url) for _ in range(users)]
    samples: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(users)

    def user(number: int) -> None:
        barrier.wait()
        for i in range(per_user):
            ms = clients[number].first_token_ms(QUESTIONS[(number * per_user + i) % 50])
            with lock:
                samples.append(ms)

    threads = [threading.Thread(target=user, args=(n,)) for n in range(users)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return samples


def _measure(make: type[GradioUser | HttpUser], url: str, *, questions: int, users: int) -> None:
    user = make(url)
    for question in QUESTIONS[:5]:
        user.first_token_ms(question)  # warm-up: imports, caches, connections
    alone = [user.first_token_ms(QUESTIONS[i % 50]) for i in range(questions)]
    print(f"-- client: {make.__doc__}")
    p95 = _summary("first token, 1 user", alone)
    crowd = _concurrent(make, url, users=users, per_user=max(1, questions // 2))
    _summary(f"first token, {users} users", crowd)
    print(f"   target 1 user p95 < 100 ms: {'PASS' if p95 < 100 else 'FAIL'}")
    limit = 1.5 * p95
    verdict = "PASS" if max(crowd) <= limit else "FAIL"
    print(f"   target {users} users max <= 1.5 x p95 = {limit:.1f} ms: {verdict}")


def _prepare(args: argparse.Namespace, server: FakeOpenAIServer, workdir: Path) -> Settings:
    llm = LLMSettings(base_url=server.base_url, api_key="bench", timeout=10)
    ui = UISettings(port=_free_port(), concurrency=args.users)
    if args.index:
        base = Settings.from_env(os.environ)
        return Settings(
            store=StoreSettings(path=args.index), llm=llm, ui=ui, chunking=base.chunking
        )
    from assistant.index.ingest import ingest
    from tests.conftest import FakeEmbedder

    settings = Settings(store=StoreSettings(path=workdir / "index"), llm=llm, ui=ui)
    ingest([ROOT / "data" / "policies"], settings=settings, embedder=FakeEmbedder())
    return settings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, help="existing index (real embedder)")
    parser.add_argument("--questions", type=int, default=50)
    parser.add_argument("--users", type=int, default=8)
    args = parser.parse_args()
    reply = Reply(text="Emergency Loans carry interest at 12% per annum [1].", chunk_chars=12)
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(default=reply) as server:
        settings = _prepare(args, server, Path(tmp))
        embedder: Embedder | None = None
        if not args.index:
            from tests.conftest import FakeEmbedder

            embedder = FakeEmbedder()
        app = build_app(settings, embedder=embedder)
        url = app.launch()
        try:
            print(f"index: {args.index or 'temp, fake embedder'}; model server delay 0 ms")
            for make in (HttpUser, GradioUser):
                _measure(make, url, questions=args.questions, users=args.users)
        finally:
            app.demo.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
