"""Serve the chat UI: the body of ``python ui.py [--host H] [--port P] [--index DIR]``."""

from __future__ import annotations

import argparse
import errno
import os
import socket
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from assistant.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    configure_logging,
    printable,
    report_error,
    settings_with_index,
)
from assistant.config import Settings
from assistant.errors import AssistantError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ui.py", description="Serve the policy chat UI.")
    parser.add_argument("--host", help="interface to listen on (env ASSISTANT_HOST)")
    parser.add_argument("--port", type=int, help="port (env ASSISTANT_PORT, default 7860)")
    parser.add_argument("--index", type=Path, help="index directory (env ASSISTANT_INDEX)")
    parser.add_argument(
        "--docs",
        type=Path,
        action="append",
        help="document root for the viewer when the index does not record one "
        "(repeatable; default data/policies)",
    )
    parser.add_argument("--share", action="store_true", help="ask Gradio for a public link")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    settings = settings_with_index(os.environ, args.index)
    ui = replace(
        settings.ui,
        host=args.host or settings.ui.host,
        port=args.port or settings.ui.port,
        share=args.share or settings.ui.share,
    )
    return replace(settings, ui=ui)


def _port_in_use(host: str, port: int) -> bool:
    """Return whether ``host:port`` is taken: binding it, as the server will, fails."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return False  # an unknown host: let the server report it
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        # As the server binds: connections of a server that just stopped or crashed,
        # left in TIME_WAIT, must not make its own port look taken on a restart.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def _busy(settings: Settings) -> int:
    host, port = settings.ui.host, settings.ui.port
    suggestion = 8000 if port != 8000 else 8001
    print(
        printable(
            f"error: port {port} on {host} is already in use (is the assistant already "
            f"running?); start on another port with --port {suggestion} "
            "(or set ASSISTANT_PORT)"
        ),
        file=sys.stderr,
    )
    return EXIT_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    """Run the UI until interrupted; return the exit code."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    args = _parser().parse_args(argv)
    configure_logging(args.verbose + 1)
    try:
        settings = _settings(args)
    except AssistantError as exc:
        return report_error(exc, sys.stderr)
    if _port_in_use(settings.ui.host, settings.ui.port):  # say so before loading the index
        return _busy(settings)
    try:
        from assistant.web.app import DEFAULT_DOC_ROOTS, build_app

        app = build_app(settings, doc_roots=args.docs or DEFAULT_DOC_ROOTS)
        url = app.launch(share=settings.ui.share)
    except AssistantError as exc:
        return report_error(exc, sys.stderr)
    except OSError as exc:
        if _port_in_use(settings.ui.host, settings.ui.port):  # taken while the index loaded
            return _busy(settings)
        print(printable(f"error: cannot start the server: {exc}"), file=sys.stderr)
        return EXIT_FAILED
    print(f"Policy assistant running at {url}  (Ctrl+C to stop)", flush=True)
    try:
        app.demo.block_thread()
    except KeyboardInterrupt:
        app.demo.close()
    return EXIT_OK
