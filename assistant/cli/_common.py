"""What every command shares: exit codes, logging, flags over settings, errors to exit codes."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from assistant.config import Settings
from assistant.errors import AssistantError, ConfigError, IndexBusyError

__all__ = [
    "EXIT_BUSY",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "configure_logging",
    "json_text",
    "lenient_stdin",
    "printable",
    "report_error",
    "settings_with_index",
]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BUSY = 0, 1, 2, 3

# C0 (but newline and tab), DEL and C1 controls drive the terminal: OSC 0 sets the title,
# OSC 52 writes the clipboard, OSC 8 hides a link, CSI 2J clears the screen, CR overwrites.
# Bidi overrides reorder what the admin reads; lone surrogates cannot be encoded.
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_TERMINAL_UNSAFE = re.compile(f"[{_UNSAFE}]")
_INLINE_UNSAFE = re.compile(f"[{_UNSAFE}\n\t\u2028\u2029]")


def printable(text: str, *, inline: bool = False) -> str:
    r"""Return ``text`` safe for a terminal: control characters as ``\x1b``-style escapes.

    Every human-readable line the commands print passes through here, since document
    text, titles and file names are untrusted. ``inline`` also escapes line breaks and
    tabs, for a name that must stay on its line.
    """
    pattern = _INLINE_UNSAFE if inline else _TERMINAL_UNSAFE
    return pattern.sub(_escape, text)


# What ``json.dumps(ensure_ascii=False)`` leaves raw but a terminal or a JavaScript
# reader acts on: DEL and the C1 controls (U+009B is CSI), line and paragraph separators,
# bidi overrides. JSON structure is ASCII, so each can only sit inside a string.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def json_text(value: object, *, indent: int | None = None) -> str:
    r"""Return ``value`` as JSON with readable non-ASCII text but every control escaped.

    Document text is untrusted and these lines go to terminals and logs: C0 controls are
    escaped by `json.dumps` itself, the rest (C1, DEL, separators, bidi) as ``\u0085``.
    """
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


class _PrintableFormatter(logging.Formatter):
    """Log lines to the terminal with `printable` text (messages name files)."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def configure_logging(verbosity: int) -> None:
    """Send log records to stderr; ``verbosity`` 0 shows warnings, 1 info, 2 debug."""
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbosity, 2)]
    handler = logging.StreamHandler()
    handler.setFormatter(_PrintableFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    # markdown-it logs every block rule it tries: thousands of lines per file at DEBUG.
    logging.getLogger("markdown_it").setLevel(logging.INFO)
    if verbosity < 2:
        for noisy in ("httpx", "chromadb"):
            logging.getLogger(noisy).setLevel(logging.WARNING)


def settings_with_index(environ: Mapping[str, str], index: Path | None) -> Settings:
    """Return ``Settings.from_env(environ)`` with an ``--index`` flag, if given, on top.

    Raises:
        ConfigError: A variable has an invalid value.
    """
    settings = Settings.from_env(environ)
    if index is not None:
        settings = replace(settings, store=replace(settings.store, path=index))
    return settings


def lenient_stdin() -> TextIO:
    """Return stdin decoding invalid UTF-8 to lone surrogates instead of raising.

    A long-running reader must survive one bad line; callers refuse such text per line
    (`assistant.words.is_valid_unicode`).
    """
    stdin = sys.stdin
    reconfigure = getattr(stdin, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="surrogateescape")
    return stdin


def report_error(exc: AssistantError, err: TextIO) -> int:
    """Print ``error: ...`` for ``exc`` and return its exit code (2 usage, 3 busy, else 1)."""
    print(f"error: {printable(str(exc))}", file=err)
    if isinstance(exc, ConfigError):
        return EXIT_USAGE
    if isinstance(exc, IndexBusyError):
        return EXIT_BUSY
    return EXIT_FAILED
