"""Both local embedding variants on both evaluation sets, in one run; prints figures.

Usage: ``python bench/compare_variants.py [--out DIR] [--dev-corpus PATH]``

For each variant (``packaged``, ``dynamic``; set through ``ASSISTANT_EMBEDDING_VARIANT``)
and each set (the sample corpus ``data/policies`` with ``data/eval/questions.jsonl``, the
dev corpus ``data/corpora/github-site-policy/Policies`` with
``data/eval/github-site-policy.jsonl``) it runs, as a user would, in child processes one
after another:

1. ``python ingest.py CORPUS --index DIR/<set>-<variant>``;
2. ``python -m assistant eval QUESTIONS --index ... --json`` (the ranking);
3. ``python -m assistant eval --answers QUESTIONS --index ... --json`` (the answers).

It prints one table (both sets, both variants) and, per set, the questions the dynamic
variant loses or gains against the packaged one on recall@5 (a question's fraction of
gold entries in the top 5), on the answer figures and on the gold phrase. The decision
rule of issue 11: the dynamic variant may become the default only if neither set loses
more than one question (net) on recall@5 or on the answer figures.

The dynamic model is built into ``DIR/cache`` (``XDG_CACHE_HOME``), so the run never
writes into the user's home and the first build is part of it. The JSON reports are kept
in ``DIR`` for later reading.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ("packaged", "dynamic")


@dataclass(frozen=True, slots=True)
class EvalSet:
    name: str
    corpus: Path
    questions: Path


@dataclass(frozen=True, slots=True)
class Result:
    """One variant on one set: the two JSON reports and the ingest's wall time."""

    ranking: dict[str, Any]
    answers: dict[str, Any]
    ingest_s: float


def run(args: list[str], *, env: dict[str, str], out: Path | None = None) -> float:
    """Run ``python ARGS`` from the repository root; keep stdout in ``out``; return seconds."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode not in (0, 1):  # eval exits 1 on a miss threshold in some modes
        sys.exit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    if out is not None:
        out.write_text(done.stdout, encoding="utf-8")
    return time.perf_counter() - started


def measure(one: EvalSet, variant: str, work: Path) -> Result:
    env = {**os.environ, "ASSISTANT_EMBEDDING_VARIANT": variant}
    env["XDG_CACHE_HOME"] = str(work / "cache")
    index = work / f"{one.name}-{variant}"
    ingest_s = run(["ingest.py", str(one.corpus), "--index", str(index), "--rebuild"], env=env)
    ranking = work / f"{one.name}-{variant}-ranking.json"
    answers = work / f"{one.name}-{variant}-answers.json"
    base = [str(one.questions), "--index", str(index), "--json"]
    run(["-m", "assistant", "eval", *base], env=env, out=ranking)
    run(["-m", "assistant", "eval", "--answers", *base], env=env, out=answers)
    print(f"  {one.name} {variant}: ingest {ingest_s:.0f} s", flush=True)
    (work / f"{one.name}-{variant}-ingest-seconds").write_text(f"{ingest_s:.1f}\n")
    return reread(one, variant, work)


def reread(one: EvalSet, variant: str, work: Path) -> Result:
    """Read a finished measurement's reports back from ``work``."""
    stem = f"{one.name}-{variant}"
    seconds = work / f"{stem}-ingest-seconds"
    return Result(
        _read(work / f"{stem}-ranking.json"),
        _read(work / f"{stem}-answers.json")["assistant"],
        float(seconds.read_text()) if seconds.exists() else float("nan"),
    )


def _read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


# --- per-question scores ------------------------------------------------------


def recall5(result: Result) -> dict[str, float]:
    """Each answerable question's fraction of gold entries found in the top 5."""
    out: dict[str, float] = {}
    for q in result.ranking["questions"]:
        ranks = q["found_ranks"]
        if q["kind"] != "unanswerable" and ranks:
            out[q["id"]] = sum(0 < r <= 5 for r in ranks) / len(ranks)  # 0: not found
    return out


def ranking_flagged(result: Result) -> dict[str, bool]:
    """Per unanswerable question: did the search say "no good match"?"""
    questions = result.ranking["questions"]
    return {q["id"]: bool(q["no_good_match"]) for q in questions if q["kind"] == "unanswerable"}


def answer_flags(result: Result, which: str) -> dict[str, bool]:
    """Per question: ``figures`` all stated, ``phrase`` gold phrase present, ``flagged``."""
    out: dict[str, bool] = {}
    for q in result.answers["questions"]:
        if which == "figures" and q["reference_figures"]:
            out[q["id"]] = not q["missing_figures"]
        elif which == "phrase" and q["kind"] != "unanswerable":
            out[q["id"]] = bool(q["gold_phrase"])
        elif which == "flagged" and q["kind"] == "unanswerable":
            out[q["id"]] = "not flagged" not in q["failures"]
    return out


def changes(
    before: Mapping[str, float], after: Mapping[str, float]
) -> tuple[list[str], list[str], float]:
    """Return the ids that got worse and better, and the net change in questions."""
    lost = sorted(k for k in before if float(after[k]) < float(before[k]))
    gained = sorted(k for k in before if float(after[k]) > float(before[k]))
    net = sum(float(after[k]) - float(before[k]) for k in before)
    return lost, gained, net


# --- printing -----------------------------------------------------------------

COLUMNS = (
    "recall@5", "MRR@10", "para r@5", "unans. flagged (ranking)",
    "gold phrase", "figures", "median words", "refused", "flagged (answers)",
)  # fmt: skip


def row(result: Result) -> list[str]:
    overall, para = result.ranking["overall"], result.ranking["by_kind"].get("paraphrase", {})
    answers = result.answers["overall"]
    return [
        f"{overall['recall@5']:.3f}",
        f"{overall['mrr@10']:.3f}",
        f"{para.get('recall@5', float('nan')):.3f}",
        f"{overall['unanswerable_flagged']:.3f}",
        f"{answers['gold_phrase']:.3f}",
        f"{answers['figures']:.3f}",
        f"{answers['median_words']:.0f}",
        f"{answers['refused_answerable']:.3f}",
        f"{answers['unanswerable_flagged']:.3f}",
    ]


def report(sets: list[EvalSet], results: dict[tuple[str, str], Result]) -> None:
    print("\n| set | variant | " + " | ".join(COLUMNS) + " | ingest s |")
    print("|---|---|" + "---:|" * (len(COLUMNS) + 1))
    for one in sets:
        for variant in VARIANTS:
            r = results[one.name, variant]
            print(f"| {one.name} | {variant} | " + " | ".join(row(r)) + f" | {r.ingest_s:.0f} |")
    print("\ndynamic against packaged, in questions (lost / gained / net):")
    verdict = True
    for one in sets:
        old, new = results[one.name, "packaged"], results[one.name, "dynamic"]
        pairs: dict[str, tuple[Mapping[str, float], Mapping[str, float]]] = {
            "recall@5": (recall5(old), recall5(new)),
            "figures": (answer_flags(old, "figures"), answer_flags(new, "figures")),
            "gold phrase": (answer_flags(old, "phrase"), answer_flags(new, "phrase")),
            "flagged": (answer_flags(old, "flagged"), answer_flags(new, "flagged")),
            "no-match": (ranking_flagged(old), ranking_flagged(new)),
        }
        for label, (before, after) in pairs.items():
            lost, gained, net = changes(before, after)
            print(f"  {one.name:<7} {label:<12} lost {lost}  gained {gained}  net {net:+.1f}")
            if label in ("recall@5", "figures") and net < -1:
                verdict = False
    decision = "dynamic may be the default" if verdict else "packaged stays the default"
    print(f"rule (no set loses more than one question on recall@5 or figures): {decision}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("/tmp/compare-variants"))
    parser.add_argument(
        "--dev-corpus",
        type=Path,
        default=ROOT / "data" / "corpora" / "github-site-policy" / "Policies",
    )
    parser.add_argument(
        "--report-only", action="store_true", help="re-read the reports in --out, run nothing"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sets = [
        EvalSet("sample", ROOT / "data" / "policies", ROOT / "data" / "eval" / "questions.jsonl"),
        EvalSet("dev", args.dev_corpus, ROOT / "data" / "eval" / "github-site-policy.jsonl"),
    ]
    started = time.perf_counter()
    work = reread if args.report_only else measure
    results = {(s.name, v): work(s, v, args.out) for s in sets for v in VARIANTS}
    report(sets, results)
    with open("/proc/loadavg", encoding="ascii") as f:
        load = " ".join(f.read().split()[:3])
    print(f"total {time.perf_counter() - started:.0f} s; load average {load}")


if __name__ == "__main__":
    main()
