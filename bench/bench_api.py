"""First token and throughput through the OpenAI-compatible API, 1 and 2 workers, beside Gradio.

Every server is its own process (``python -m assistant serve --api --workers N``, and
``ui.py`` for the Gradio figures) over one real index of data/policies (packaged
embedding model); the chat model is `tests.support.openai_server.FakeOpenAIServer` in a third
process, answering at once with a text that names the question, so an answer given
to the wrong client shows. Clients are asyncio + httpx streams in this process.

For 1, 8 and 32 clients arriving together (``--rounds`` times each), it prints first
streamed token p50 / p95 / max, answers per second, and answers lost (no 200, no
``[DONE]``) or mixed (not the answer that question got alone).

    python bench/bench_api.py                  # temp index of data/policies
    python bench/bench_api.py --index /tmp/x   # an existing index (same embedding model)
    python bench/bench_api.py --offline        # the extractive answerer instead of a model

Targets (2 cores): 8 clients together, max first token <= 120 ms with 2 workers;
no answer lost or mixed at 32.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

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
FORMS = ("What is the {}?", "Tell me about the {}.", "Explain the {} rules.")
QUESTIONS = tuple(form.format(topic) for form in FORMS for topic in TOPICS)
CLIENTS = (1, 8, 32)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve_fake_model() -> None:
    """Run the fake chat model until killed (SIGTERM); each answer names its question."""
    from tests.support.openai_server import FakeOpenAIServer, Reply

    def echo(body: dict[str, object]) -> Reply:
        last = json.dumps(body.get("messages", [])[-1:])  # type: ignore[index]
        number = next((i for i, q in enumerate(QUESTIONS) if json.dumps(q)[1:-1] in last), -1)
        return Reply(text=f"Answer to question {number}: see the policy [1].", chunk_chars=12)

    server = FakeOpenAIServer(handler=echo).start()
    print(server.base_url, flush=True)  # the parent reads the URL of the free port it took
    threading.Event().wait()


class Process:
    """A server subprocess in its own process group, ready once ``ready_url`` answers."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], ready_url: str) -> None:
        self.process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"server exited: {' '.join(argv)}")
            try:
                if httpx.get(ready_url, timeout=1).status_code < 500:
                    return
            except httpx.HTTPError:
                time.sleep(0.3)
        self.stop()
        raise SystemExit(f"server did not start: {' '.join(argv)}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@dataclass(frozen=True, slots=True)
class Outcome:
    first_ms: float
    text: str
    complete: bool


Ask = Callable[[httpx.AsyncClient, str], Awaitable[Outcome]]


def api_asker(url: str) -> Ask:
    async def ask(client: httpx.AsyncClient, question: str) -> Outcome:
        body = {"messages": [{"role": "user", "content": question}], "stream": True}
        body["assistant"] = {"append_sources": False}
        started, first, text, done = time.perf_counter(), 0.0, "", False
        async with client.stream("POST", url + "/v1/chat/completions", json=body) as response:
            if response.status_code != 200:
                await response.aread()
                return Outcome(0.0, f"HTTP {response.status_code}", False)
            async for line in response.aiter_lines():
                if line == "data: [DONE]":
                    done = True
                elif line.startswith("data: {"):
                    choices = json.loads(line[6:])["choices"]
                    content = choices[0]["delta"].get("content", "") if choices else ""
                    if content and not first:
                        first = (time.perf_counter() - started) * 1000
                    text += content
        return Outcome(first, text, done)

    return ask


def gradio_asker(url: str) -> Ask:
    async def ask(client: httpx.AsyncClient, question: str) -> Outcome:
        started, first, text = time.perf_counter(), 0.0, ""
        posted = await client.post(
            url + "/gradio_api/call/chat", json={"data": [question, [], [], 4]}
        )
        event_id = posted.json()["event_id"]
        done = False
        async with client.stream("GET", f"{url}/gradio_api/call/chat/{event_id}") as response:
            async for line in response.aiter_lines():
                if line.startswith("event: complete"):
                    done = True
                if not line.startswith("data:"):
                    continue
                try:
                    data = json.loads(line[5:])
                except ValueError:
                    continue
                if data and isinstance(data, list) and data[0] and data[0][0].get("content"):
                    first = first or (time.perf_counter() - started) * 1000
                    text = str(data[0][0]["content"])
        return Outcome(first, text, done)

    return ask


async def _crowd(
    ask: Ask, clients: int, rounds: int, offset: int
) -> tuple[list[tuple[str, Outcome]], float]:
    limits = httpx.Limits(max_connections=clients * 2, max_keepalive_connections=clients * 2)
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        await asyncio.gather(*(ask(http, QUESTIONS[i % len(QUESTIONS)]) for i in range(clients)))
        results: list[tuple[str, Outcome]] = []
        started = time.perf_counter()
        for r in range(rounds):
            questions = [
                QUESTIONS[(offset + r * clients + i) % len(QUESTIONS)] for i in range(clients)
            ]
            outcomes = await asyncio.gather(*(ask(http, q) for q in questions))
            results += zip(questions, outcomes, strict=True)
        return results, time.perf_counter() - started


def _report(
    label: str, clients: int, results: list[tuple[str, Outcome]], wall: float, alone: dict[str, str]
) -> float:
    firsts = sorted(o.first_ms for _, o in results if o.complete)
    lost = sum(1 for _, o in results if not o.complete)
    mixed = sum(1 for q, o in results if o.complete and q in alone and o.text != alone[q])
    if not firsts:
        print(f"{label:<16} {clients:>3}  every answer lost")
        return float("inf")
    p95 = firsts[max(0, round(0.95 * len(firsts)) - 1)]
    print(
        f"{label:<16} {clients:>3} {len(results):>4}  p50 {statistics.median(firsts):6.1f}  "
        f"p95 {p95:6.1f}  max {firsts[-1]:6.1f} ms  {len(results) / wall:6.1f} answers/s  "
        f"lost {lost}  mixed {mixed}",
        flush=True,
    )
    return firsts[-1]


def _run(label: str, ask: Ask, rounds: int) -> dict[int, float]:
    alone: dict[str, str] = {}

    async def reference() -> None:
        async with httpx.AsyncClient(timeout=120) as http:
            for q in QUESTIONS:
                alone[q] = (await ask(http, q)).text

    asyncio.run(reference())
    worst = {}
    for clients in CLIENTS:
        n_rounds = max(2, rounds * 8 // clients) if clients > 1 else rounds * 4
        results, wall = asyncio.run(_crowd(ask, clients, n_rounds, offset=clients))
        worst[clients] = _report(label, clients, results, wall, alone)
    return worst


def _ingest(index: Path, env: dict[str, str]) -> None:
    print(f"ingesting data/policies into {index} ...", flush=True)
    subprocess.run(
        [sys.executable, "ingest.py", "data/policies", "--index", str(index)],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, help="existing index of data/policies")
    parser.add_argument("--rounds", type=int, default=10, help="rounds of 8 clients")
    parser.add_argument("--offline", action="store_true", help="extractive answers, no model")
    parser.add_argument("--no-gradio", action="store_true", help="skip the Gradio figures")
    parser.add_argument("--serve-fake-model", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_fake_model:
        _serve_fake_model()
        return 0
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ASSISTANT_", "OPENAI_"))}
    base["GRADIO_ANALYTICS_ENABLED"] = "False"
    with tempfile.TemporaryDirectory() as tmp:
        index = args.index or Path(tmp) / "index"
        if args.index is None:
            _ingest(index, base)
        servers: list[Process] = []
        fake = None
        env = {**base, "ASSISTANT_INDEX": str(index)}
        if not args.offline:
            fake = subprocess.Popen(
                [sys.executable, __file__, "--serve-fake-model"],
                stdout=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            assert fake.stdout is not None
            model_url = fake.stdout.readline().strip()
            env |= {"ASSISTANT_LLM_BASE_URL": model_url, "ASSISTANT_LLM_API_KEY": "bench"}
        print(
            f"answers: {'extractive (offline)' if args.offline else 'fake model, no delay'}; "
            f"{os.cpu_count()} CPUs; first token in ms",
            flush=True,
        )
        try:
            for workers in (1, 2):
                port = _free_port()
                argv = [sys.executable, "-m", "assistant", "serve", "--api", "--port", str(port)]
                argv += ["--workers", str(workers), "--api-allow-anonymous-loopback"]
                argv += ["--keys", str(Path(tmp) / "none.json")]
                url = f"http://127.0.0.1:{port}"
                server = Process(argv, env, url + "/health")
                servers.append(server)
                worst = _run(
                    f"api {workers} worker{'s' if workers > 1 else ''}", api_asker(url), args.rounds
                )
                server.stop()
                if workers == 2:
                    verdict = "PASS" if worst[8] <= 120 else "FAIL"
                    print(f"   target: 8 clients, 2 workers, max first token <= 120 ms: {verdict}")
            if not args.no_gradio:
                port = _free_port()
                ui_env = {**env, "ASSISTANT_CONCURRENCY": "32", "ASSISTANT_PORT": str(port)}
                url = f"http://127.0.0.1:{port}"
                server = Process([sys.executable, "ui.py"], ui_env, url + "/")
                servers.append(server)
                _run("gradio ui.py", gradio_asker(url), args.rounds)
        finally:
            for server in servers:
                server.stop()
            if fake is not None:
                os.killpg(fake.pid, signal.SIGTERM)
                fake.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
