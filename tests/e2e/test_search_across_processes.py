"""End to end in real processes: ingest, search from a long-running reader, re-ingest."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.paths import ROOT

LOANS = """# Loan Policy

## Emergency Loans

Emergency loans carry interest of {rate} per annum on a reducing balance.
They are approved within one working day.

## Development Loans

Development loans fund long term projects such as building a house.
"""
LEAVE = """# Leave Policy

## Annual Leave

Staff receive twenty one days of annual leave each calendar year.
"""


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSISTANT_", "OPENAI_"))}
    env["PYTHONPATH"] = str(ROOT)
    return env


def ingest(docs: Path, index: Path) -> None:
    subprocess.run(
        [sys.executable, "ingest.py", str(docs), "--index", str(index)],
        cwd=ROOT,
        env=environment(),
        check=True,
        capture_output=True,
        timeout=240,
    )


def ask(reader: subprocess.Popen[str], question_id: str, question: str) -> dict[str, object]:
    assert reader.stdin is not None
    assert reader.stdout is not None
    reader.stdin.write(json.dumps({"id": question_id, "question": question}) + "\n")
    reader.stdin.flush()
    answer: dict[str, object] = json.loads(reader.stdout.readline())
    return answer


@pytest.mark.timeout(600)
def test_long_running_reader_sees_a_new_ingest_without_restart(tmp_path: Path) -> None:
    docs, index = tmp_path / "docs", tmp_path / "index"
    docs.mkdir()
    (docs / "loans.md").write_text(LOANS.format(rate="12%"))
    (docs / "leave.md").write_text(LEAVE)
    ingest(docs, index)
    reader = subprocess.Popen(
        [sys.executable, "-m", "assistant", "search", "--json", "--index", str(index), "-k", "2"],
        cwd=ROOT,
        env=environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        question = "What is the interest rate on emergency loans?"
        before = ask(reader, "1", question)
        top = before["chunks"][0]  # type: ignore[index]
        assert top["source"] == "loans.md"
        assert str(top["heading_path"]).startswith("Loan Policy")  # small sections may merge
        assert "12% per annum" in top["text"]

        (docs / "loans.md").write_text(LOANS.format(rate="15%"))
        ingest(docs, index)
        # The replaced chunks are gone from the first question on; the new ones
        # arrive once the reader's background refresh has fetched them.
        seen = []
        for attempt in range(20):
            after = ask(reader, f"2.{attempt}", question)
            assert after["id"] == f"2.{attempt}"
            texts = " ".join(str(c["text"]) for c in after["chunks"])  # type: ignore[attr-defined]
            assert "12% per annum" not in texts
            seen.append("15% per annum" in texts)
            if seen[-1]:
                break
            time.sleep(0.25)
        assert seen[-1], "the edited document never came back"
    finally:
        assert reader.stdin is not None
        reader.stdin.close()
        code = reader.wait(timeout=60)
    assert code == 0
