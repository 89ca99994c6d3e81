"""What the audit log costs an answer, over a real index and an evaluation set.

Every question of the set is answered as the chat does (offline unless
``ASSISTANT_LLM_*`` is set) and recorded through `ChatAudit`, as the chat records
it; prints the answer time, the time the audit call adds to the answer path
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

from assistant.answering.service import finish
from assistant.config import Settings
from assistant.session.stack import open_stack
from assistant.types import ANONYMOUS, SearchFilters
from assistant.web.feedback import ChatAudit


def main(index: Path, questions: Path) -> None:
    settings = Settings.from_env({"ASSISTANT_INDEX": str(index)})
    stack = open_stack(settings)
    service, log = stack.assistant, stack.log
    assert log is not None, "ASSISTANT_AUDIT is off"
    audit = ChatAudit(log, doc_meta=stack.doc_meta)
    costs, answer_ms = [], []
    lines = [json.loads(line) for line in questions.read_text().splitlines() if line.strip()]
    for line in lines:
        started = time.perf_counter()
        run = service.ask(line["question"])
        answer, shown = finish(run)
        answered = time.perf_counter()
        audit.answered(
            run,
            answer,
            shown,
            question=line["question"],
            filters=SearchFilters(),
            user=ANONYMOUS,
            timings_s={"total": answered - started},
        )
        answer_ms.append((answered - started) * 1000)
        costs.append((time.perf_counter() - answered) * 1000)
    flushing = time.perf_counter()
    log.flush()
    flush_ms = (time.perf_counter() - flushing) * 1000
    rows = log.store.records()
    unanswered = sum(r.no_match or r.not_covered for r, _ in rows)
    print(f"questions {len(lines)}, records {len(rows)}, unanswered {unanswered}")
    print(
        f"answer median {statistics.median(answer_ms):.0f} ms; audit call on the answer path "
        f"median {statistics.median(costs):.2f} ms, max {max(costs):.2f} ms; "
        f"final flush {flush_ms:.0f} ms"
    )
    wal = Path(f"{log.path}-wal")
    print(f"db {log.path.stat().st_size} bytes + wal {wal.stat().st_size if wal.exists() else 0}")
    log.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
