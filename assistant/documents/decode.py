"""Turn the raw bytes of a text file into clean text, or say why we cannot.

Limits (documented, enforced here): no line may exceed `MAX_LINE_CHARS`
characters. Text that is not UTF-8 is decoded only when charset-normalizer is
confident; a warning is logged then.
"""

from __future__ import annotations

import codecs
import logging

from assistant.errors import DocumentError

__all__ = ["MAX_LINE_CHARS", "check_line_lengths", "decode_text", "normalise_newlines"]

logger = logging.getLogger(__name__)

MAX_LINE_CHARS = 1_000_000
_MAX_CHAOS = 0.15
_PREFERRED = "cp1252"


def normalise_newlines(text: str) -> str:
    """Return ``text`` with Windows (CR LF) and old Mac (CR) line ends turned into LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def check_line_lengths(text: str, *, source: str) -> None:
    """Raise `DocumentError` when a line is longer than `MAX_LINE_CHARS`.

    Args:
        text: Text with newline line ends.
        source: The document's name, for the error.

    Raises:
        DocumentError: Naming the first (1-based) line that is too long.
    """
    if len(text) <= MAX_LINE_CHARS:
        return
    for number, line in enumerate(text.split("\n"), start=1):
        if len(line) > MAX_LINE_CHARS:
            raise DocumentError(source, f"line {number} is longer than 1,000,000 characters")


def decode_text(data: bytes, *, source: str) -> str:
    """Decode a text file: strip a BOM, reject binary data, normalise newlines.

    Args:
        data: The file's raw bytes.
        source: The document's name, for errors and warnings.

    Returns:
        The decoded text with newline line ends and no BOM.

    Raises:
        DocumentError: The data is binary, not confidently decodable, or has an
            overlong line.
    """
    text = _decode(data, source=source)
    text = normalise_newlines(text)
    check_line_lengths(text, source=source)
    return text


def _decode(data: bytes, *, source: str) -> str:
    for bom, encoding in ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if data.startswith(bom) and not data.startswith(codecs.BOM_UTF32_LE):
            try:
                return data[len(bom) :].decode(encoding)
            except UnicodeDecodeError as exc:
                raise DocumentError(source, f"invalid {encoding} text: {exc.reason}") from exc
    if b"\x00" in data:
        raise DocumentError(source, "binary content (NUL bytes) in a text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return _detect(data, source=source, error=exc)


def _detect(data: bytes, *, source: str, error: UnicodeDecodeError) -> str:
    from charset_normalizer import from_bytes  # heavy; only needed for non-UTF-8 files

    matches = from_bytes(data)
    best = matches.best()
    if best is not None:
        # Short texts fit many code pages equally well; prefer the most common one.
        near = (
            m
            for m in matches
            if m.chaos <= best.chaos + 0.02 and m.coherence >= best.coherence - 0.05
        )
        best = next((m for m in near if _PREFERRED in m.could_be_from_charset), best)
    where = f"invalid byte 0x{data[error.start]:02x} at offset {error.start}"
    if best is None:
        raise DocumentError(source, f"not UTF-8 text ({where}; encoding not detected)")
    encoding = best.encoding
    if encoding.startswith(("utf_16", "utf_32")) or best.chaos > _MAX_CHAOS:
        raise DocumentError(
            source, f"not UTF-8 text ({where}; detected {encoding} without confidence)"
        )
    logger.warning("%s is not UTF-8; decoded as %s", source, encoding)
    return str(best)
