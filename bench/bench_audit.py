"""What the audit log costs an answer, over a real index and an evaluation set.

Every question of the set is answered as the chat does (offline unless
``ASSISTANT_LLM_*`` is set) and recorded by the desk, as the chat's are; prints
the answer time, the time checking and recording add to the answer path
(record made, queued), the final flush and the database size. The records go
to the index's audit database (``INDEX-audit.sqlite3``), ready for
``python -m assistant report --index INDEX``.

    python bench/bench_audit.py /tmp/x-sample data/eval/questions.jsonl
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from assistant.config import Settings
from assistant.session import AnswerTurn, Request, open_desk


def main(index: Path, questions: Path) -> None:
    settings = Settings.from_env({"ASSISTANT_INDEX": str(index)})
    desk = open_desk(settings)
    log = desk.log
    assert log is not None, "ASSISTANT_AUDIT is off"
    costs, answer_ms = [], []
    lines = [json.loads(line) for line in questions.read_text().splitlines() if line.strip()]
    for line in lines:
        started = time.perf_counter()
        asked = desk.request(line["question"])
        turn = desk.ask(asked, door="bench") if isinstance(asked, Request) else asked
        if not isinstance(turn, AnswerTurn):
            print(f"not asked: {turn}")
            continue
        answered = started
        for _ in turn:  # the last event comes once the answer is checked and recorded
            finished, answered = answered, time.perf_counter()
        turn.close()
        answer_ms.append((finished - started) * 1000)
        costs.append((answered - finished) * 1000)
    flushing = time.perf_counter()
    log.flush()
    flush_ms = (time.perf_counter() - flushing) * 1000
    rows = log.store.records()
    unanswered = sum(r.no_match or r.not_covered for r, _ in rows)
    print(f"questions {len(lines)}, records {len(rows)}, unanswered {unanswered}")
    print(
        f"answer median {statistics.median(answer_ms):.0f} ms; check and record on the answer path "
        f"median {statistics.median(costs):.2f} ms, max {max(costs):.2f} ms; "
        f"final flush {flush_ms:.0f} ms"
    )
    wal = Path(f"{log.path}-wal")
    print(f"db {log.path.stat().st_size} bytes + wal {wal.stat().st_size if wal.exists() else 0}")
    log.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
