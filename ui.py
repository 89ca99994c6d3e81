"""Start the policy assistant's chat UI: ``python ui.py [--host H] [--port P] [--index DIR]``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from assistant.config import Settings
from assistant.errors import AssistantError, ConfigError


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
    settings = Settings.from_env(os.environ)
    ui = replace(
        settings.ui,
        host=args.host or settings.ui.host,
        port=args.port or settings.ui.port,
        share=args.share or settings.ui.share,
    )
    store = replace(settings.store, path=args.index) if args.index else settings.store
    return replace(settings, ui=ui, store=store)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the UI until interrupted; return the exit code."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    args = _parser().parse_args(argv)
    from assistant.cli import configure_logging

    configure_logging(args.verbose + 1)
    try:
        from assistant.webapp import DEFAULT_DOC_ROOTS, build_app

        settings = _settings(args)
        app = build_app(settings, doc_roots=args.docs or DEFAULT_DOC_ROOTS)
        url = app.launch(share=settings.ui.share)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except AssistantError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: cannot start the server: {exc}", file=sys.stderr)
        return 1
    print(f"Policy assistant running at {url}  (Ctrl+C to stop)", flush=True)
    try:
        app.demo.block_thread()
    except KeyboardInterrupt:
        app.demo.close()
    return 0


if __name__ == "__main__":
    logging.captureWarnings(True)
    raise SystemExit(main())
