"""Run each given test file N times in a row while one core is kept busy.

Issue 28's target: every browser or server test file passes ten times in a row
with the other core busy. Each run is a fresh pytest process
(``-p no:cacheprovider -q``), so no state carries over between runs; one busy
process (``python -c "while True: pass"``, started and killed here) takes a core
for the whole loop. Each failing run's output goes to the log folder, named
after the file and the run, with the load average when it ended.

    python bench/loop_files.py --runs 10 tests/e2e/test_browser_*.py
    python bench/loop_files.py --runs 1 --until 22:15 tests/api/test_openai_api.py

Prints one line per run as it ends and a Markdown table at the end:
file / runs / passed / failed / seconds (the sum over its runs). ``--until HH:MM``
(UTC) starts no run after that time, so a long loop reports how far it got.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

BUSY_LOOP = "while True: pass"
# pytest's last line: "3 passed, 1 skipped in 12.34s (0:00:12)", between "=" signs without -q.
_SUMMARY = re.compile(
    r"^=*\s*(\d+ (?:passed|failed|skipped|errors?|deselected|xfailed|xpassed)\b.*?) in [\d.]+s",
    re.M,
)


@dataclass
class FileCounts:
    """One file's loop so far."""

    path: str
    passed: int = 0
    failed: int = 0
    seconds: float = 0.0
    failed_runs: list[int] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return self.passed + self.failed


@dataclass(frozen=True)
class RunResult:
    """One pytest process over one file."""

    ok: bool
    seconds: float
    summary: str
    output: str


def run_once(python: str, path: str, timeout: float) -> RunResult:
    """Runs pytest on ``path`` in a fresh process."""
    command = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", path]
    start = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        output, ok = done.stdout + done.stderr, done.returncode == 0
    except subprocess.TimeoutExpired as exc:
        output = f"{_text(exc.stdout)}{_text(exc.stderr)}\n[loop] killed after {timeout:.0f} s\n"
        ok = False
    seconds = time.monotonic() - start
    found = _SUMMARY.findall(output)
    return RunResult(ok, seconds, found[-1] if found else "no summary", output)


def _text(data: str | bytes | None) -> str:
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data or ""


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def keep_failure(log_dir: Path, path: str, run: int, result: RunResult) -> Path:
    """Writes a failing run's output to ``log_dir`` and returns the log's path."""
    log_dir.mkdir(parents=True, exist_ok=True)
    stem = path.replace("/", "_").removesuffix(".py")
    log = log_dir / f"{stem}.run{run}.log"
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    header = f"# {path} run {run}, ended {stamp}, load average {load_average()}\n"
    log.write_text(header + result.output, encoding="utf-8")
    return log


def deadline(until: dt.time, now: dt.datetime) -> dt.datetime:
    """Return the moment ``until`` names: today's, or tomorrow's when today's is long gone.

    A loop started at 23:30 with ``--until 01:15`` means the coming night; one
    started at 22:20 with ``--until 22:15`` is already past.
    """
    today = dt.datetime.combine(now.date(), until, tzinfo=dt.UTC)
    return today + dt.timedelta(days=1) if today < now - dt.timedelta(hours=12) else today


def past(until: dt.datetime | None) -> bool:
    return until is not None and dt.datetime.now(dt.UTC) >= until


def loop(args: argparse.Namespace, loads: list[float]) -> list[FileCounts]:
    """Runs every file ``args.runs`` times in a row, file after file."""
    counts = [FileCounts(path) for path in args.files]
    for entry in counts:
        for run in range(1, args.runs + 1):
            if past(args.until):
                print(
                    f"[loop] past {args.until:%H:%M}: stopped before {entry.path} run {run}",
                    flush=True,
                )
                return counts
            result = run_once(args.python, entry.path, args.timeout)
            loads.append(os.getloadavg()[0])
            entry.seconds += result.seconds
            if result.ok:
                entry.passed += 1
                note = ""
            else:
                entry.failed += 1
                entry.failed_runs.append(run)
                note = f" -> {keep_failure(args.log_dir, entry.path, run, result)}"
            verdict = "pass" if result.ok else "FAIL"
            print(
                f"[loop] {entry.path} run {run}: {verdict} {result.seconds:.1f} s "
                f"({result.summary}; load {load_average()}){note}",
                flush=True,
            )
    return counts


def table(counts: list[FileCounts]) -> str:
    lines = ["| File | Runs | Passed | Failed | Seconds |", "|---|---|---|---|---|"]
    for entry in counts:
        if entry.runs:
            which = ", ".join(map(str, entry.failed_runs))
            cell = f"{entry.failed} (runs {which})" if entry.failed else "0"
            row = (
                f"| `{entry.path}` | {entry.runs} | {entry.passed} | {cell} | {entry.seconds:.0f} |"
            )
            lines.append(row)
    runs = sum(entry.runs for entry in counts)
    failures = sum(entry.failed for entry in counts)
    seconds = sum(entry.seconds for entry in counts)
    lines.append(f"| all | {runs} | {runs - failures} | {failures} | {seconds:.0f} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("files", nargs="+", help="test files, each run --runs times in a row")
    parser.add_argument("--runs", type=int, default=10, help="runs per file (default 10)")
    parser.add_argument(
        "--log-dir", type=Path, default=Path("bench/out/loop_logs"), help="failing runs' output"
    )
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs pytest")
    parser.add_argument(
        "--timeout", type=float, default=900.0, help="seconds before one run is killed"
    )
    parser.add_argument(
        "--no-busy", dest="busy", action="store_false", help="do not keep a core busy"
    )
    parser.add_argument(
        "--until",
        type=dt.time.fromisoformat,
        default=None,
        help="HH:MM (UTC): start no run after this time",
    )
    args = parser.parse_args(argv)
    if args.until is not None:
        args.until = deadline(args.until, dt.datetime.now(dt.UTC))
    return args


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so the busy process and a running pytest are ended too.
    signal.signal(signal.SIGTERM, _exit_on_signal)
    busy = subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) if args.busy else None
    loads: list[float] = []
    start = dt.datetime.now(dt.UTC)
    try:
        counts = loop(args, loads)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    print()
    print(table(counts))
    if loads:
        print(f"\nload average (1 min, after each run): {min(loads):.2f}-{max(loads):.2f}")
    end = dt.datetime.now(dt.UTC)
    print(f"started {start:%H:%M} UTC, ended {end:%H:%M} UTC, busy core: {args.busy}")
    return 1 if any(entry.failed for entry in counts) else 0


if __name__ == "__main__":
    raise SystemExit(main())
