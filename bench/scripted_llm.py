"""A loopback chat model with scripted verdicts, for ``eval --answers`` with a model configured.

It measures the service's "not covered" second line of defence without a model's own
errors in the way: `tests.support.openai_server.FakeOpenAIServer` on 127.0.0.1 answers each
question of the given eval sets as a model that follows the prompt perfectly would.

- An unanswerable question (no ``gold``) gets the prompt's fixed sentence ("The policy
  documents do not cover this."), and every fourth one another wording a model might
  use instead (`REFUSALS`), so the recognition of free wordings is measured too.
  ``--free-wordings`` gives every unanswerable question one of `REFUSALS`, in turn.
- An answerable question gets its reference ``answer`` field, cited ``[1]``.
- Anything else (a prompt naming no known question) gets `UNKNOWN`.

The question is read from the prompt's last user message (``Question: ...``), so the
verdicts hold whatever retrieval found. Usage, from the repository root::

    python bench/scripted_llm.py data/eval/questions.jsonl data/eval/github-site-policy.jsonl &
    # it prints its base URL, e.g. http://127.0.0.1:40123/v1, then serves until killed
    ASSISTANT_LLM_BASE_URL=http://127.0.0.1:40123/v1 ASSISTANT_LLM_API_KEY=scripted \\
        python -m assistant eval data/eval/questions.jsonl --answers --index /tmp/x

With ``--replay RUN.json`` (the ``--json`` output of an earlier ``eval --answers`` run
with a real model, over the same questions) it answers each question with what that
model said instead, so one run of a slow model can be scored again under other answer
settings (``ASSISTANT_GROUNDED_ONLY``) on exactly the same model text. What the service
added to the text it showed is removed first (the inline flags, the no-citation warning,
an error note); an answer the service replaced by its no-match text (the model said "not
covered") is replayed as `FIXED_REFUSAL`, and one that fell back to the offline answer (the
model failed before its first word) as a server error, which falls back the same way.

Tests can use `scripted_handler` with their own `FakeOpenAIServer`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant.answering.grounding import NO_CITATION_WARNING, UNSUPPORTED_MARK  # noqa: E402
from tests.support.openai_server import FakeOpenAIServer, Reply  # noqa: E402

__all__ = [
    "FIXED_REFUSAL",
    "REFUSALS",
    "UNKNOWN",
    "Script",
    "load_replay",
    "load_script",
    "scripted_handler",
]

# Rule 3 of assistant.answering.prompt.SYSTEM_PROMPT, word for word.
FIXED_REFUSAL = "The policy documents do not cover this."
# Other ways a model says the same; one of every four unanswerable questions gets one.
REFUSALS = (
    "I'm sorry, but the provided sources don't mention this.",
    "The sources do not specify this.",
    "There is no information about this in the policies.",
    "Unfortunately, I cannot find this in the documents provided.",
    "This is not covered by the policy documents.",
)
UNKNOWN = "I can only answer questions about the policies [1]."
_QUESTION = re.compile(r"\nQuestion: (.*?)\n\nAnswer from the sources", re.S)

# The service's own words in a shown answer (assistant.answering.service).
_MODEL_REFUSED = "the language model found no answer in the closest sections"
_ERROR_NOTE = re.compile(r"\n\n\*The (?:language model|answer|connection|question and) [^*\n]*\*\Z")
_FAILED = "\x00failed"  # replayed as a server error

# question text -> scripted answer
Script = dict[str, str]


def load_script(paths: Iterable[Path], *, free_wordings: bool = False) -> Script:
    """Return the scripted answer of every question of the eval sets at ``paths``.

    With ``free_wordings`` every unanswerable question gets one of `REFUSALS` in turn,
    never the fixed sentence.
    """
    script: Script = {}
    for path in paths:
        unanswerable = 0  # per set, so a set's script does not depend on the others given
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            if record.get("gold"):
                script[record["question"]] = f"{record.get('answer') or UNKNOWN} [1]"
                continue
            unanswerable += 1
            if free_wordings:
                script[record["question"]] = REFUSALS[(unanswerable - 1) % len(REFUSALS)]
                continue
            wording = REFUSALS[(unanswerable // 4 - 1) % len(REFUSALS)]
            script[record["question"]] = wording if unanswerable % 4 == 0 else FIXED_REFUSAL
    return script


def load_replay(run: Path, questions: Iterable[Path]) -> Script:
    """Return what the model of an earlier ``eval --answers --json`` run said to each question."""
    text_of = {}
    for path in questions:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                text_of[record["id"]] = record["question"]
    outcomes = json.loads(run.read_text(encoding="utf-8"))["assistant"]["questions"]
    script: Script = {}
    for outcome in outcomes:
        answer, mode = outcome["answer"], outcome["mode"]
        if mode == "extractive":
            script[text_of[outcome["id"]]] = _FAILED
        elif mode == "model":
            script[text_of[outcome["id"]]] = _model_text(answer)
        elif _MODEL_REFUSED in answer:
            script[text_of[outcome["id"]]] = FIXED_REFUSAL
    return script


def _model_text(shown: str) -> str:
    text = _ERROR_NOTE.sub("", shown).replace(UNSUPPORTED_MARK, "")
    return text.removeprefix(f"{NO_CITATION_WARNING}\n\n")


def scripted_handler(script: Script) -> Callable[[dict[str, Any]], Reply]:
    """Return a `FakeOpenAIServer` handler answering from ``script``."""

    def handle(body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or [{}]
        found = _QUESTION.search(str(messages[-1].get("content", "")))
        text = script.get(found[1].strip(), UNKNOWN) if found else UNKNOWN
        if text == _FAILED:
            return Reply(fault="server_error")
        return Reply(text=text, chunk_chars=16)

    return handle


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("questions", nargs="+", type=Path, help="eval sets (JSON lines)")
    parser.add_argument(
        "--replay", type=Path, help="answer as the model of this `eval --answers --json` run did"
    )
    parser.add_argument(
        "--free-wordings",
        action="store_true",
        help="refuse every unanswerable question in one of the other wordings, in turn",
    )
    args = parser.parse_args()
    if args.replay:
        script = load_replay(args.replay, args.questions)
    else:
        script = load_script(args.questions, free_wordings=args.free_wordings)
    server = FakeOpenAIServer(handler=scripted_handler(script)).start()
    print(server.base_url, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
