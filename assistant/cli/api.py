"""``python -m assistant keys ...`` and ``python -m assistant serve [--api] [--ui]``.

``keys add --user NAME [--group G ...]`` prints a new API key once (only its hash is
stored), ``keys list`` shows ids, users and groups, ``keys remove ID`` revokes one.
``serve --api --workers N`` runs the OpenAI-compatible API in N uvicorn processes;
``--ui`` also serves the chat UI from this process, on its own port. Flags become
environment variables before the workers start, since each worker reads its
settings from the environment (`assistant.api.server.create_app`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from assistant.cli._common import EXIT_FAILED, EXIT_OK, printable, report_error
from assistant.config import Settings
from assistant.errors import AssistantError

__all__ = ["add_api_commands", "run_api_command"]


def add_api_commands(commands: Any) -> None:
    """Add the ``keys`` and ``serve`` sub-commands to ``python -m assistant``."""
    keys = commands.add_parser("keys", help="manage the API's bearer keys")
    actions = keys.add_subparsers(dest="keys_command", required=True)
    add = actions.add_parser("add", help="create a key for a user and print it once")
    add.add_argument("--user", required=True, help="who requests with this key run as")
    add.add_argument("--group", action="append", default=[], help="a group of the user (repeat)")
    listing = actions.add_parser("list", help="list the keys (ids, users, groups; no secrets)")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    remove = actions.add_parser("remove", help="revoke a key by its id")
    remove.add_argument("key_id", help="the id `keys list` shows, e.g. key-1a2b3c4d5e6f")
    for parser in (add, listing, remove):
        _add_store_flags(parser)
    serve = commands.add_parser("serve", help="serve the API (--api) and/or the chat UI")
    serve.add_argument("--api", action="store_true", help="serve the OpenAI-compatible API")
    serve.add_argument("--ui", action="store_true", help="also serve the chat UI (default alone)")
    serve.add_argument("--workers", type=int, help="API worker processes (ASSISTANT_API_WORKERS)")
    serve.add_argument("--host", help="API interface (ASSISTANT_API_HOST, default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="API port (ASSISTANT_API_PORT, default 8000)")
    serve.add_argument(
        "--api-allow-anonymous-loopback",
        action="store_true",
        help="answer API calls without a valid key from 127.0.0.1 / ::1 only",
    )
    serve.add_argument("--public-url", help="the chat UI's public base URL, for viewer links")
    _add_store_flags(serve)


def _add_store_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index", type=Path, help="index directory (env ASSISTANT_INDEX)")
    parser.add_argument("--keys", type=Path, help="keys file (env ASSISTANT_API_KEYS)")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")


def _overrides(args: argparse.Namespace) -> dict[str, str]:
    pairs = {
        "ASSISTANT_INDEX": args.index,
        "ASSISTANT_API_KEYS": args.keys,
        "ASSISTANT_API_WORKERS": getattr(args, "workers", None),
        "ASSISTANT_API_HOST": getattr(args, "host", None),
        "ASSISTANT_API_PORT": getattr(args, "port", None),
        "ASSISTANT_PUBLIC_URL": getattr(args, "public_url", None),
        "ASSISTANT_API_ANONYMOUS_LOOPBACK": "1"
        if getattr(args, "api_allow_anonymous_loopback", False)
        else None,
    }
    return {name: str(value) for name, value in pairs.items() if value is not None}


def run_api_command(
    args: argparse.Namespace, environ: Mapping[str, str], out: TextIO, err: TextIO
) -> int:
    """Run ``keys ...`` or ``serve ...``; return the exit code."""
    overrides = _overrides(args)
    try:
        settings = Settings.from_env({**environ, **overrides})
        if args.command == "keys":
            return _keys(args, settings, out, err)
        return _serve(args, settings, overrides, out)
    except AssistantError as exc:
        return report_error(exc, err)


def _keys(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from assistant.api.keys import open_key_store

    store = open_key_store(settings)
    if args.keys_command == "add":
        secret, record = store.add(args.user, tuple(args.group))
        print(secret, file=out)
        groups = ", ".join(record.groups) or "no groups"
        print(
            printable(
                f"key {record.id} for {record.user} ({groups}) stored in {store.path}; "
                "the key is shown only now"
            ),
            file=err,
        )
        return EXIT_OK
    if args.keys_command == "remove":
        if store.remove(args.key_id):
            print(printable(f"removed {args.key_id}", inline=True), file=out)
            return EXIT_OK
        print(printable(f"error: no key {args.key_id} in {store.path}", inline=True), file=err)
        return EXIT_FAILED
    records = store.records()
    if args.json:
        rows = [
            {"id": r.id, "user": r.user, "groups": list(r.groups), "created": r.created}
            for r in records
        ]
        print(json.dumps(rows), file=out)
    for r in records if not args.json else ():
        line = f"{r.id}  {r.user}  [{', '.join(r.groups)}]  {r.created}"
        print(printable(line, inline=True), file=out)
    return EXIT_OK


def _serve(
    args: argparse.Namespace, settings: Settings, overrides: dict[str, str], out: TextIO
) -> int:
    if not args.api:
        from assistant.cli.serve import main as serve_ui

        return serve_ui(["--index", str(settings.store.path)])
    os.environ.update(overrides)  # the workers read their settings from here
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    app = None
    if args.ui:
        from assistant.web.app import build_app

        app = build_app(settings)
        print(f"Policy assistant chat at {app.launch()}", file=out, flush=True)
    try:
        from assistant.api.server import serve
    except ImportError as exc:
        message = f"error: the API needs starlette and uvicorn ({exc}): pip install '.[api]'"
        print(message, file=sys.stderr)
        return EXIT_FAILED
    api = settings.api
    print(
        f"Policy assistant API at http://{api.host}:{api.port}/v1 "
        f"({api.workers} worker{'s' if api.workers > 1 else ''}; Ctrl+C to stop)",
        file=out,
        flush=True,
    )
    try:
        serve(settings, log_level="info" if args.verbose else "warning")
    finally:
        if app is not None:
            app.demo.close()
    print("stopped", file=sys.stderr)
    return EXIT_OK
