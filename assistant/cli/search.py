"""``python -m assistant search|ask|eval|keys|serve``: search and ask from a shell or a script.

``search "question"`` prints ranked results; ``search --json`` reads JSONL
questions on stdin and writes one JSON line per question (flushed at once, so a
long-running caller can keep the process open; the model loads once and new
ingests are picked up between questions). ``ask`` answers as the chat does
(`assistant.cli.ask`). ``keys`` and ``serve`` manage and run the API
(`assistant.cli.api`). ``eval`` scores retrieval, or with ``--answers`` the
answers, against a question set (`assistant.cli.evaluate`). Exit codes: 0
success, 1 runtime failure, 2 usage or configuration.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from assistant.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    configure_logging,
    json_text,
    lenient_stdin,
    printable,
    report_error,
    settings_with_index,
)
from assistant.cli._filters import problem_error
from assistant.cli.access import LOCAL_OPERATOR, add_users_parser, bind, cli_user, run_users
from assistant.config import Settings
from assistant.errors import AssistantError, ConfigError
from assistant.protocols import Embedder, Searcher
from assistant.session import Problem, filters_for, open_searcher, shared_embedder, user_of
from assistant.types import HEADING_SEPARATOR, SearchFilters, SearchResult
from assistant.words import is_valid_unicode, quoted_list, topic_words

__all__ = [
    "EXIT_FAILED",
    "EXIT_USAGE",
    "build_searcher",
    "main",
    "result_to_json",
]


SearcherFactory = Callable[[Settings], Searcher]
EmbedderFactory = Callable[[Settings], Embedder]


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index", type=Path, help="index directory (env ASSISTANT_INDEX)")
    parser.add_argument("--mode", choices=("hybrid", "dense", "lexical"), help="retriever")
    parser.add_argument("--min-score", type=float, help="relevance floor (env ASSISTANT_MIN_SCORE)")
    parser.add_argument("--section-tokens", type=int, help="small-to-big section budget")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    parser.add_argument(
        "--as",
        dest="as_user",
        metavar="USER",
        help="search as this user of ASSISTANT_USERS (default: the operator, who reads all)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m assistant")
    commands = parser.add_subparsers(dest="command", required=True)
    search = commands.add_parser("search", help="find the sections that answer a question")
    search.add_argument("question", nargs="?", help="omit with --json to read JSONL from stdin")
    search.add_argument("-k", type=int, help="results per question (env ASSISTANT_TOP_K)")
    search.add_argument("--source", action="append", default=[], help="only this document")
    search.add_argument("--tag", action="append", default=[], help="only documents with a tag")
    search.add_argument("--date-from", default="", help="effective on or after YYYY-MM-DD")
    search.add_argument("--date-to", default="", help="effective on or before YYYY-MM-DD")
    search.add_argument("--trace", action="store_true", help="also print the retrieval trace")
    _add_common(search)
    ask = commands.add_parser("ask", help="answer a question as the chat does")
    ask.add_argument("question", nargs="?", help="omit with --json to read JSONL from stdin")
    ask.add_argument("-k", type=int, help="sources per answer (env ASSISTANT_TOP_K)")
    ask.add_argument("--source", action="append", default=[], help="only this document")
    ask.add_argument("--tag", action="append", default=[], help="only documents with a tag")
    ask.add_argument(
        "--no-audit", action="store_true", help="keep these answers out of the audit log"
    )
    _add_common(ask)
    ev = commands.add_parser("eval", help="measure retrieval (or answers) against a question set")
    ev.add_argument("questions", type=Path, help="JSONL questions with gold sections")
    ev.add_argument("-k", type=int, nargs="+", help="recall cutoffs (default 1 3 5 10)")
    ev.add_argument(
        "--sweep",
        nargs="+",
        metavar="NAME=V1,V2",
        help="grid over chunk_tokens, overlap, k, mode (re-indexes --docs per chunking)",
    )
    ev.add_argument("--docs", type=Path, default=Path("data/policies"), help="corpus for --sweep")
    ev.add_argument(
        "--plot", type=Path, metavar="PNG", help="with --sweep: also write a chart of it here"
    )
    ev.add_argument("--answers", action="store_true", help="score the answers, not the ranking")
    ev.add_argument(
        "--answer-mode",
        choices=(
            "assistant",
            "baseline",
            "both",
            "oracle",
            "all",
            "model",
            "model-compare",
            "oracle-uncited",
        ),
        help="with --answers: the assistant (default), the cosine baseline, both side by side, "
        "the oracle (a perfect loopback model: what the pipeline loses), all three (and the "
        "model when one is configured), the configured chat model with its claims cited "
        "(model), beside its own markers only (model-compare), or the oracle writing no "
        "markers, its claims cited (oracle-uncited)",
    )
    ev.add_argument("--misses", action="store_true", help="with --answers: list each failure")
    _add_common(ev)
    access = commands.add_parser("access", help="see what a user gets")
    check = access.add_subparsers(dest="action", required=True).add_parser(
        "check", help="answer a question as USER would see it"
    )
    check.add_argument("user")
    check.add_argument("question")
    check.set_defaults(source=[], tag=[], k=None)
    _add_common(check)
    add_users_parser(commands)
    from assistant.cli.api import add_api_commands
    from assistant.cli.audit import add_commands
    from assistant.cli.sync import add_sync_parser

    add_api_commands(commands)
    add_commands(commands, _add_common)
    add_sync_parser(commands, _add_common)
    return parser


def settings_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> Settings:
    """Return ``Settings.from_env`` with the command-line flags applied on top.

    Raises:
        ConfigError: A flag or variable has an invalid value.
    """
    settings = settings_with_index(environ, args.index)
    retrieval = settings.retrieval
    if args.mode:
        retrieval = replace(retrieval, mode=args.mode)
    if args.min_score is not None:
        retrieval = replace(retrieval, min_score=args.min_score)
    if args.section_tokens is not None:
        retrieval = replace(retrieval, section_tokens=args.section_tokens)
    if args.command in ("search", "ask") and args.k is not None:
        retrieval = replace(retrieval, top_k=args.k)
    return replace(settings, retrieval=retrieval)


def build_searcher(settings: Settings) -> Searcher:
    """Return a `Retriever` over the configured index with the configured embedder."""
    return open_searcher(settings)


def main(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    searcher_factory: SearcherFactory = build_searcher,
    embedder_factory: EmbedderFactory = shared_embedder,
) -> int:
    """Run ``python -m assistant`` and return the exit code."""
    err = stderr or sys.stderr
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse has printed the usage message
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    configure_logging(args.verbose)
    io = _IO(stdin or lenient_stdin(), stdout or sys.stdout)
    env = os.environ if environ is None else environ
    if args.command in ("keys", "serve"):
        from assistant.cli.api import run_api_command

        return run_api_command(args, env, io.out, err)
    try:
        if args.command == "users":
            return run_users(args, Settings.from_env(env), stdin=io.stdin, out=io.out)
        settings = settings_from_args(args, env)
        if args.command == "sync":
            from assistant.cli.sync import run_sync

            return run_sync(
                args, settings, env, out=io.out, err=err, embedder_factory=embedder_factory
            )
        if args.command in ("audit", "feedback", "changes", "report"):
            from assistant.cli.audit import run_command

            return run_command(args, settings, out=io.out)
        name = args.user if args.command == "access" else args.as_user
        searcher_factory = bind(searcher_factory, cli_user(name, settings))
        if args.command == "eval":
            from assistant.cli.evaluate import run_eval

            return run_eval(
                args,
                settings,
                out=io.out,
                searcher_factory=searcher_factory,
                embedder_factory=embedder_factory,
            )
        if args.command in ("ask", "access"):
            from assistant.cli.ask import run_ask

            return run_ask(
                args, settings, stdin=io.stdin, out=io.out, searcher=searcher_factory(settings)
            )
        _check_question(args)
        return _search(args, settings, io, searcher_factory(settings))
    except AssistantError as exc:
        return report_error(exc, err)


class _IO:
    def __init__(self, stdin: TextIO, out: TextIO) -> None:
        self.stdin = stdin
        self.out = out


def _filters(args: argparse.Namespace) -> SearchFilters:
    for flag, value in (("--date-from", args.date_from), ("--date-to", args.date_to)):
        if value:
            try:
                dt.date.fromisoformat(value)
            except ValueError as exc:
                raise ConfigError(f"{flag} must be a date like 2024-01-31, got {value!r}") from exc
    return SearchFilters(
        sources=tuple(args.source),
        tags=tuple(args.tag),
        date_from=args.date_from,
        date_to=args.date_to,
    )


def _check_question(args: argparse.Namespace) -> None:
    """Refuse a missing or blank question before the model loads (a usage error)."""
    if args.question is None and not args.json:
        raise ConfigError("give a question, or --json to read questions from stdin")
    if args.question is not None and not args.question.strip():
        raise ConfigError("give a question (this one is empty), or --json without one")


def _search(args: argparse.Namespace, settings: Settings, io: _IO, searcher: Searcher) -> int:
    filters = filters_for(searcher, _filters(args), user_of(searcher, LOCAL_OPERATOR))
    if isinstance(filters, Problem):
        raise problem_error(filters)
    k = settings.retrieval.top_k
    if args.json:
        if args.question is not None:
            _write_json_line(io.out, None, searcher.search(args.question, k=k, filters=filters))
            return EXIT_OK
        for line in io.stdin:
            if line.strip():
                _answer_json_line(line, io.out, searcher, k=k, filters=filters)
        return EXIT_OK
    result = searcher.search(args.question, k=k, filters=filters)
    print(printable(format_result(result, min_score=settings.retrieval.min_score)), file=io.out)
    if args.trace:
        print(printable("\n".join(result.trace)), file=io.out)
    return EXIT_OK


def _answer_json_line(
    line: str, out: TextIO, searcher: Searcher, *, k: int, filters: SearchFilters
) -> None:
    try:
        request = json.loads(line)
    except ValueError as exc:
        _write_error_line(out, None, f"bad request line: {exc}")
        return
    if not isinstance(request, dict):
        _write_error_line(out, None, "bad request line: not a JSON object")
        return
    question_id, question = request.get("id"), request.get("question")
    if not isinstance(question, str) or not question.strip():
        # str(None) would search for "None", str(["a"]) for "['a']".
        _write_error_line(out, question_id, "bad request line: question must be a non-empty string")
        return
    if not (_writable(question) and _writable(question_id)):
        _write_error_line(out, question_id, "bad request line: not valid Unicode")
        return
    try:
        result = searcher.search(question, k=k, filters=filters)
    except AssistantError as exc:  # no index yet, a store error: this line fails, not the batch
        _write_error_line(out, question_id, str(exc))
        return
    _write_json_line(out, question_id, result)


def _writable(value: object) -> bool:
    """Return whether ``value`` holds no lone surrogate (it can be searched and written back)."""
    return is_valid_unicode(json.dumps(value, ensure_ascii=False))


def _write_error_line(out: TextIO, question_id: object, error: str) -> None:
    record = {"id": question_id if _writable(question_id) else None, "error": error}
    out.write(json_text(record) + "\n")
    out.flush()


def _write_json_line(out: TextIO, question_id: object, result: SearchResult) -> None:
    out.write(json_text({"id": question_id, **result_to_json(result)}) + "\n")
    out.flush()


def result_to_json(result: SearchResult) -> dict[str, object]:
    """Return the contract shape: ``{"chunks": [...], "no_good_match": bool}``."""
    chunks = [
        {
            "rank": hit.rank,
            "score": round(hit.score, 4),
            "chunk_id": hit.chunk.chunk_id,
            "text": hit.chunk.text,
            "source": hit.chunk.source,
            "heading_path": HEADING_SEPARATOR.join(hit.chunk.heading_path),
            "page": hit.chunk.page or None,
            "section_text": hit.section_text,
        }
        for hit in result.hits
    ]
    return {"chunks": chunks, "no_good_match": result.no_good_match}


def format_result(result: SearchResult, *, min_score: float) -> str:
    """Return ranked hits as readable text: rank, score, source, heading path, page, snippet."""
    lines = []
    if result.no_good_match:
        why = result.no_match_reason or f"relevance floor {min_score:.2f}"
        lines.append(f"No good match ({why}); the closest sections:")
    if not result.hits:
        lines.append("No results.")
    for hit in result.hits:
        page = f", page {hit.chunk.page}" if hit.chunk.page else ""
        flag = " [superseded]" if hit.superseded else ""
        snippet = " ".join(hit.chunk.body.split())
        snippet = snippet if len(snippet) <= 200 else snippet[:199] + "…"
        source, breadcrumb = printable(hit.chunk.source, inline=True), hit.chunk.breadcrumb
        lines.append(f"{hit.rank}. {hit.score:.3f}  {source}{page}{flag}")
        lines.append(f"   {printable(breadcrumb, inline=True)}")
        lines.append(f"   {snippet}")
    named = topic_words(result.unknown_words)
    if named:
        lines.append(f"No indexed document uses {quoted_list(named)}.")
    return "\n".join(lines)
