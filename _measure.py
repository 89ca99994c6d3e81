import json, time, statistics, sys
from pathlib import Path
from assistant.config import Settings
from assistant.answering.service import build_assistant, finish
from assistant.retrieval.factory import open_retriever
from assistant.audit.log import open_audit_log
from assistant.web.feedback import ChatAudit
from assistant.types import SearchFilters

index, questions = Path(sys.argv[1]), Path(sys.argv[2])
settings = Settings.from_env({"ASSISTANT_INDEX": str(index)})
retriever = open_retriever(settings)
service = build_assistant(settings, searcher=retriever, embedder=retriever.embedder)
log = open_audit_log(settings)
audit = ChatAudit(log, doc_meta=lambda s: retriever.snapshot().docs.get(s))
costs, answer_ms = [], []
lines = [json.loads(l) for l in questions.read_text().splitlines() if l.strip()]
for q in lines:
    t0 = time.perf_counter()
    run = service.ask(q["question"])
    answer, shown = finish(run)
    t1 = time.perf_counter()
    audit.answered(run, answer, shown, question=q["question"], filters=SearchFilters(), user=__import__("assistant.types").types.ANONYMOUS, timings_s={"total": t1 - t0})
    t2 = time.perf_counter()
    answer_ms.append((t1 - t0) * 1000); costs.append((t2 - t1) * 1000)
t3 = time.perf_counter(); log.flush(); flush_ms = (time.perf_counter() - t3) * 1000
rows = log.store.records()
print(f"questions {len(lines)}, records {len(rows)}, unanswered {sum(r.no_match or r.not_covered for r, _ in rows)}")
print(f"answer median {statistics.median(answer_ms):.0f} ms; audit call on the answer path median {statistics.median(costs):.2f} ms, max {max(costs):.2f} ms; final flush {flush_ms:.0f} ms")
print(f"db size {log.path.stat().st_size} bytes (+ wal {Path(str(log.path) + '-wal').stat().st_size if Path(str(log.path) + '-wal').exists() else 0})")
log.close()
