"""The ``eval`` subcommand: retrieval figures, a sweep, or (``--answers``) answer figures.

A sweep re-indexes the corpus into a temporary index per (chunk_tokens, overlap)
pair with the real ingest pipeline, evaluates every mode on it (recall@k for
each k comes from one search at depth 10, since top-k hits are a prefix of the
top-10), prints a table and, with ``--plot PATH``, writes a PNG chart there.
``--answers`` asks every question through the chat's assistant and scores what
the answer shows (`assistant.answering.evaluation`); ``--answer-mode baseline``
or ``both`` also runs the cosine baseline on the same retrieval, ``oracle`` the
service with a perfect loopback model (`assistant.answering.oracle`), and
``all`` the three side by side from one retrieval run (and ``model`` beside them
when a chat model is configured). ``model`` asks the configured chat model, its
claims cited by `assistant.answering.claims`; ``model-compare`` the same model with
its own markers only (``model-raw``) beside it; ``oracle-uncited`` the oracle with
its markers dropped, cited by the claims (`assistant.answering.model_eval`).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from assistant.cli._charts import pyplot
from assistant.cli._common import json_text, printable
from assistant.cli._sweep_view import SweepRow, format_sweep, plot_sweep, sweep_figure, sweep_json
from assistant.config import ChunkingSettings, Settings
from assistant.errors import ConfigError
from assistant.protocols import Embedder, Searcher
from assistant.retrieval.evaluation import (
    DEFAULT_CUTOFFS,
    EvalQuestion,
    evaluate,
    format_report,
    load_questions,
    report_to_json,
)

if TYPE_CHECKING:
    from assistant.answering.evaluation import AnswerReport

__all__ = [
    "SweepRow",
    "parse_grid",
    "plot_sweep",
    "run_answer_eval",
    "run_eval",
    "run_sweep",
    "sweep_figure",
]

logger = logging.getLogger(__name__)

_ANSWERERS: dict[str, tuple[str, ...]] = {
    "both": ("assistant", "baseline"),
    "baseline": ("baseline",),
    "oracle": ("oracle",),
    "all": ("assistant", "baseline", "oracle"),
    "model": ("model",),
    "model-compare": ("model-raw", "model"),
    "oracle-uncited": ("oracle-uncited",),
}
_NEED_MODEL = ("model", "model-raw")
_GRID_TYPES: dict[str, Callable[[str], object]] = {
    "chunk_tokens": int,
    "overlap": float,
    "k": int,
    "mode": str,
}


def run_eval(
    args: argparse.Namespace,
    settings: Settings,
    *,
    out: TextIO,
    searcher_factory: Callable[[Settings], Searcher],
    embedder_factory: Callable[[Settings], Embedder],
) -> int:
    """Run ``eval`` (``--sweep``, ``--answers``) and print the results; return the exit code.

    Raises:
        ConfigError: Options that do not go together, or an unreadable question file.
    """
    if not args.answers and (args.answer_mode or args.misses):
        raise ConfigError("--answer-mode and --misses go with --answers")
    if args.answers and args.sweep:
        raise ConfigError("--answers and --sweep cannot be combined")
    questions = load_questions(args.questions)
    if args.answers:
        answerers = _ANSWERERS.get(args.answer_mode, ("assistant",))
        if args.answer_mode == "all" and settings.llm.enabled:
            answerers = (*answerers, "model")
        if any(a in _NEED_MODEL for a in answerers) and not settings.llm.enabled:
            raise ConfigError(
                f"--answer-mode {args.answer_mode} needs a chat model: set ASSISTANT_LLM_BASE_URL"
            )
        return run_answer_eval(
            questions,
            settings,
            out=out,
            answerers=answerers,
            searcher=searcher_factory(settings),
            embedder=embedder_factory(settings) if "baseline" in answerers else None,
            as_json=args.json,
            misses=args.misses,
        )
    if args.plot is not None and not args.sweep:
        raise ConfigError("--plot goes with --sweep")
    if args.sweep:
        grid = parse_grid(args.sweep, settings=settings)
        if args.plot is not None:
            # No matplotlib: say so before the sweep, not after minutes of it.
            pyplot("the sweep plot")
        rows = run_sweep(
            questions,
            grid,
            settings=settings,
            docs=args.docs,
            embedder=embedder_factory(settings),
        )
        print(sweep_json(rows) if args.json else printable(format_sweep(rows)), file=out)
        if args.plot is not None:
            plot_sweep(rows, args.plot)
            if not args.json:
                print(printable(f"plot written to {args.plot}"), file=out)
        return 0
    report = evaluate(
        searcher_factory(settings), questions, cutoffs=tuple(args.k or DEFAULT_CUTOFFS)
    )
    print(
        json.dumps(report_to_json(report), indent=2)
        if args.json
        else printable(format_report(report)),
        file=out,
    )
    return 0


def run_answer_eval(
    questions: Sequence[EvalQuestion],
    settings: Settings,
    *,
    out: TextIO,
    answerers: Sequence[str],
    searcher: Searcher,
    embedder: Embedder | None,
    as_json: bool,
    misses: bool,
) -> int:
    """Score the answers of each of ``answerers`` and print the report; return the exit code.

    The answerers share one searcher that searches each query once, so all of them
    answer from one retrieval run.
    """
    from assistant.answering.evaluation import SearchOnce
    from assistant.answering.evaluation_report import (
        format_answer_reports,
        format_misses,
        reports_to_json,
    )

    once = SearchOnce(searcher)
    with contextlib.ExitStack() as stack:
        reports = _answer_reports(
            questions, settings, answerers=answerers, searcher=once, embedder=embedder, stack=stack
        )
    if as_json:
        print(json_text(reports_to_json(reports), indent=2), file=out)
        return 0
    print(format_answer_reports(reports), file=out)
    if misses:
        for report in reports:
            print("", file=out)
            print(format_misses(report), file=out)
    return 0


def _answer_reports(
    questions: Sequence[EvalQuestion],
    settings: Settings,
    *,
    answerers: Sequence[str],
    searcher: Searcher,
    embedder: Embedder | None,
    stack: contextlib.ExitStack,
) -> tuple[AnswerReport, ...]:
    from assistant.answering.evaluation import ModelAnswerer, Oracle, evaluate_answers
    from assistant.answering.oracle import OracleModel
    from assistant.session import open_assistant

    def served(model: OracleModel, *, cite_claims: bool) -> Settings:
        llm = replace(
            settings.llm,
            base_url=model.base_url,
            api_key="oracle",
            model="oracle",
            cite_claims=cite_claims,
        )
        return replace(settings, llm=llm)

    service = open_assistant(settings, searcher=searcher, embedder=embedder)
    oracle = None
    if "oracle" in answerers:
        model = stack.enter_context(OracleModel())
        oracle_settings = served(model, cite_claims=settings.llm.cite_claims)
        oracle_service = open_assistant(oracle_settings, searcher=searcher, embedder=embedder)
        oracle = Oracle(service=oracle_service, model=model)
    models: dict[str, ModelAnswerer] = {}
    for name, cite_claims in (("model", True), ("model-raw", False)):
        if name in answerers:
            llm = replace(settings.llm, cite_claims=cite_claims)
            configured = replace(settings, llm=llm)
            models[name] = ModelAnswerer(
                open_assistant(configured, searcher=searcher, embedder=embedder)
            )
    if "oracle-uncited" in answerers:
        uncited = stack.enter_context(OracleModel(cite=False))
        uncited_settings = served(uncited, cite_claims=True)
        uncited_service = open_assistant(uncited_settings, searcher=searcher, embedder=embedder)
        models["oracle-uncited"] = ModelAnswerer(uncited_service, oracle=uncited)
    return evaluate_answers(
        service, questions, answerers=answerers, embedder=embedder, oracle=oracle, models=models
    )


def parse_grid(items: Sequence[str], *, settings: Settings) -> dict[str, list[object]]:
    """Parse ``name=v1,v2`` items; unnamed dimensions take the current setting.

    Raises:
        ConfigError: An unknown name or a value of the wrong type.
    """
    grid: dict[str, list[object]] = {
        "chunk_tokens": [settings.chunking.max_tokens],
        "overlap": [settings.chunking.overlap],
        "k": [settings.retrieval.top_k],
        "mode": [settings.retrieval.mode],
    }
    for item in items:
        name, sep, values = item.partition("=")
        if not sep or name not in _GRID_TYPES:
            raise ConfigError(
                f"--sweep takes NAME=V1,V2 with NAME one of {sorted(_GRID_TYPES)}, got {item!r}"
            )
        try:
            grid[name] = [_GRID_TYPES[name](v.strip()) for v in values.split(",") if v.strip()]
        except ValueError as exc:
            raise ConfigError(f"--sweep {name}: {exc}") from exc
    return grid


def run_sweep(
    questions: Sequence[EvalQuestion],
    grid: dict[str, list[object]],
    *,
    settings: Settings,
    docs: Path,
    embedder: Embedder,
) -> list[SweepRow]:
    """Index ``docs`` once per chunking setting (temporary index); evaluate every combination."""
    from assistant.index.ingest import ingest
    from assistant.session import open_searcher

    rows: list[SweepRow] = []
    for tokens, overlap in itertools.product(grid["chunk_tokens"], grid["overlap"]):
        chunking = replace(
            settings.chunking, max_tokens=int(str(tokens)), overlap=float(str(overlap))
        )
        chunking = _with_valid_minimum(chunking)
        with tempfile.TemporaryDirectory(prefix="assistant-sweep-") as tmp:
            trial = replace(
                settings, chunking=chunking, store=replace(settings.store, path=Path(tmp), host="")
            )
            ingest([docs], settings=trial, embedder=embedder)
            count = 0
            for mode in grid["mode"]:
                retrieval = replace(trial.retrieval, mode=str(mode))
                searcher = open_searcher(replace(trial, retrieval=retrieval), embedder=embedder)
                count = len(searcher.snapshot().chunks)
                cutoffs = tuple(sorted({int(str(k)) for k in grid["k"]} | {10}))
                report = evaluate(searcher, questions, cutoffs=cutoffs)
                figures = report.figures()
                for k in grid["k"]:
                    rows.append(
                        SweepRow(
                            chunk_tokens=chunking.max_tokens,
                            overlap=chunking.overlap,
                            mode=str(mode),
                            k=int(str(k)),
                            chunks=count,
                            recall=figures.get(f"recall@{k}", 0.0),
                            mrr=figures.get("mrr@10", 0.0),
                            unanswerable_flagged=figures.get("unanswerable_flagged", 0.0),
                            false_no_good_match=figures.get("false_no_good_match", 0.0),
                            suggested_min_score=report.suggested_min_score(),
                        )
                    )
            logger.info("sweep: %d tokens, overlap %.2f done (%d chunks)", tokens, overlap, count)
    return rows


def _with_valid_minimum(chunking: ChunkingSettings) -> ChunkingSettings:
    if chunking.min_tokens < chunking.max_tokens:
        return chunking
    return replace(chunking, min_tokens=chunking.max_tokens // 4)
