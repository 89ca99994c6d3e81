"""The local embedder: all-MiniLM-L6-v2 on onnxruntime, no torch, no network.

The pipeline is sentence-transformers' for this model: WordPiece tokens
truncated at 256, mean pooling over the attention mask, L2 normalisation.
Inputs are sorted by token length and each batch is padded only to its own
longest input, so a batch of short texts costs what short texts cost (Chroma's
default path pads everything to 256). onnxruntime runs sequentially on at most
two threads with spinning off: a spinning pool burns a core while the indexer
reads files, and the UI process shares the machine with the chat model.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from assistant.config import LOCAL_MODEL_TOKENS
from assistant.embeddings.model_files import (
    MODEL_PACKAGE,
    MODEL_SHA256,
    TOKENIZER_PACKAGE,
    TOKENIZER_SHA256,
    default_cache_dir,
    dynamic_model_path,
    packaged_model_path,
    packaged_tokenizer_path,
    verify_sha256,
)
from assistant.errors import EmbeddingError
from assistant.types import TokenVectors

if TYPE_CHECKING:
    import onnxruntime as ort
    from tokenizers import Tokenizer

__all__ = ["DIMENSION", "MAX_INPUT_TOKENS", "VARIANTS", "OnnxEmbedder", "int8_scores"]

logger = logging.getLogger(__name__)

DIMENSION = 384
MAX_INPUT_TOKENS = LOCAL_MODEL_TOKENS  # the model's max_seq_length; config refuses longer chunks
VARIANTS = {"packaged": "int8", "dynamic": "int8-dynamic"}


class _Loaded:
    """The tokenizers and the session, made together on first use."""

    def __init__(
        self,
        session: ort.InferenceSession,
        model_sha256: str,
        embed_tok: Tokenizer,
        count_tok: Tokenizer,
    ):
        self.session = session
        self.model_sha256 = model_sha256
        self.embed_tok = embed_tok
        self.count_tok = count_tok
        self.input_names = frozenset(i.name for i in session.get_inputs())
        self.output_name = session.get_outputs()[0].name


class OnnxEmbedder:
    """An `Embedder` running all-MiniLM-L6-v2 from the packaged ONNX file.

    Construction is free; the first ``embed`` or ``count_tokens`` call verifies
    the files and loads the session (about half a second). Safe to share
    between threads.

    Args:
        variant: ``"packaged"`` (the shipped file) or ``"dynamic"`` (a
            dynamically quantized copy built once into ``cache_dir``).
        batch_size: Inputs per onnxruntime run.
        threads: onnxruntime intra-op threads (default ``min(2, cpu count)``).
        model_path: Another model file, checked against ``model_sha256``.
        model_sha256: The digest ``model_path`` must have.
        tokenizer_path: Another ``tokenizer.json``, checked against the pinned digest.
        cache_dir: Where the ``dynamic`` variant is kept (default
            ``$XDG_CACHE_HOME/policy-assistant``).
    """

    def __init__(
        self,
        *,
        variant: str = "packaged",
        batch_size: int = 32,
        threads: int | None = None,
        model_path: Path | None = None,
        model_sha256: str = MODEL_SHA256,
        tokenizer_path: Path | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        if variant not in VARIANTS:
            raise EmbeddingError(f"unknown embedding variant {variant!r}; use one of {VARIANTS}")
        if batch_size < 1:
            raise EmbeddingError(f"batch size must be positive, got {batch_size}")
        self.variant = variant
        self.batch_size = batch_size
        self.threads = threads if threads is not None else min(2, os.cpu_count() or 1)
        self._model_path = model_path
        self._model_sha256 = model_sha256
        self._tokenizer_path = tokenizer_path
        self._cache_dir = cache_dir
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()

    @property
    def identity(self) -> str:
        """Return ``local:all-MiniLM-L6-v2:int8``, or ``...:int8-dynamic:<digest>``.

        The dynamic copy is made on this machine by the installed onnx and
        onnxruntime, and another version may write different weights, so its
        identity carries the first 16 hex digits of the built file's sha256: an
        index built with one copy is never searched with another. Asking for it
        builds and loads the copy (the packaged identity costs nothing).

        Raises:
            EmbeddingError: The dynamic copy cannot be built or loaded.
        """
        name = f"local:all-MiniLM-L6-v2:{VARIANTS[self.variant]}"
        if self.variant == "packaged":
            return name
        return f"{name}:{self._load().model_sha256[:16]}"

    @property
    def dimension(self) -> int:
        """Return 384."""
        return DIMENSION

    @property
    def max_input_tokens(self) -> int:
        """Return 256, the model's ``max_seq_length``; longer inputs are truncated."""
        return MAX_INPUT_TOKENS

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Return each text's WordPiece count, [CLS] and [SEP] included, untruncated."""
        loaded = self._load()
        return [len(e.ids) for e in loaded.count_tok.encode_batch(list(texts))]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Return one L2-normalised row per text, in input order.

        Raises:
            EmbeddingError: The model could not be loaded or failed on a batch.
        """
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        if not texts:
            return out
        loaded = self._load()
        encodings = loaded.embed_tok.encode_batch(list(texts))
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            out[rows] = self._run(loaded, [ids[i] for i in rows])
        return out

    def embed_tokens(
        self, texts: Sequence[str]
    ) -> tuple[npt.NDArray[np.float32], list[TokenVectors]]:
        """Return `embed`'s rows and, from the same model run, each text's word-piece vectors.

        The word-piece vectors are the model's last hidden states before pooling,
        each L2-normalised, without [CLS], [SEP] or padding: what token-level
        late interaction (max-sim) compares.

        Raises:
            EmbeddingError: The model could not be loaded or failed on a batch.
        """
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        tokens: list[TokenVectors] = [TokenVectors((), np.zeros((0, DIMENSION), np.float32))] * len(
            texts
        )
        if not texts:
            return out, tokens
        loaded = self._load()
        encodings = loaded.embed_tok.encode_batch(list(texts))
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            states = self._states(loaded, [ids[i] for i in rows])
            if states.ndim != 3:  # a model that pools itself has no word-piece states
                out[rows] = _pool_and_normalise(states, np.ones((len(rows), 1), np.int64))
                continue
            mask = np.zeros(states.shape[:2], dtype=np.int64)
            for j, i in enumerate(rows):
                mask[j, : len(ids[i])] = 1
                pieces = tuple(encodings[i].tokens[1:-1])
                vectors = states[j, 1 : len(ids[i]) - 1]
                norms = np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
                tokens[i] = TokenVectors(pieces, (vectors / norms).astype(np.float32))
            out[rows] = _pool_and_normalise(states, mask)
        return out, tokens

    def _run(self, loaded: _Loaded, batch: list[npt.NDArray[np.int64]]) -> npt.NDArray[np.float32]:
        longest = max(len(row) for row in batch)
        mask = np.zeros((len(batch), longest), dtype=np.int64)
        for i, row in enumerate(batch):
            mask[i, : len(row)] = 1
        return _pool_and_normalise(self._states(loaded, batch), mask)

    def _states(
        self, loaded: _Loaded, batch: list[npt.NDArray[np.int64]]
    ) -> npt.NDArray[np.float32]:
        """Return the model's output for one batch, padded to its longest row."""
        longest = max(len(row) for row in batch)
        input_ids = np.zeros((len(batch), longest), dtype=np.int64)
        mask = np.zeros((len(batch), longest), dtype=np.int64)
        for i, row in enumerate(batch):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in loaded.input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        try:
            (output,) = loaded.session.run([loaded.output_name], feeds)
        except Exception as exc:  # onnxruntime raises its own unexported exception types
            raise EmbeddingError(f"the local embedding model failed on a batch: {exc}") from exc
        return np.asarray(output, dtype=np.float32)

    def _load(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load_files()
            return self._loaded

    def _load_files(self) -> _Loaded:
        from tokenizers import Tokenizer

        tokenizer_path = self._tokenizer_path or packaged_tokenizer_path()
        verify_sha256(tokenizer_path, expected=TOKENIZER_SHA256, reinstall=TOKENIZER_PACKAGE)
        model_path = self._model_path or packaged_model_path()
        verify_sha256(model_path, expected=self._model_sha256, reinstall=MODEL_PACKAGE)
        session, model_sha256 = self._open_session(model_path)
        try:
            embed_tok = Tokenizer.from_file(str(tokenizer_path))
            count_tok = Tokenizer.from_file(str(tokenizer_path))
        except Exception as exc:  # tokenizers raises a bare Exception on bad JSON
            raise EmbeddingError(f"cannot read tokenizer {tokenizer_path}: {exc}") from exc
        # The file pins padding and truncation to 128; this model reads 256
        # and we pad per batch ourselves.
        for tok in (embed_tok, count_tok):
            tok.no_padding()
        embed_tok.enable_truncation(max_length=MAX_INPUT_TOKENS)
        count_tok.no_truncation()
        return _Loaded(session, model_sha256, embed_tok, count_tok)

    def _open_session(self, model_path: Path) -> tuple[ort.InferenceSession, str]:
        """Return the session and the sha256 of the model file it runs."""
        if self.variant == "packaged":
            return _make_session(model_path, threads=self.threads), self._model_sha256
        cache_dir = self._cache_dir or default_cache_dir()
        derived = dynamic_model_path(
            model_path,
            source_sha256=self._model_sha256,
            cache_dir=cache_dir,
            quantize=_quantize,
        )
        try:
            return _session_and_digest(derived, threads=self.threads)
        except EmbeddingError:
            # Writes are atomic, but a cache can still be damaged from outside: rebuild once.
            logger.warning("cached embedding model %s is unreadable; rebuilding it", derived)
            derived.unlink(missing_ok=True)
            derived = dynamic_model_path(
                model_path,
                source_sha256=self._model_sha256,
                cache_dir=cache_dir,
                quantize=_quantize,
            )
            return _session_and_digest(derived, threads=self.threads)


def _session_and_digest(path: Path, *, threads: int) -> tuple[ort.InferenceSession, str]:
    """Load ``path`` and hash the very bytes loaded (another process may replace the file)."""
    try:
        model = path.read_bytes()
    except OSError as exc:
        raise EmbeddingError(f"cannot read embedding model {path}: {exc}") from exc
    return _make_session(path, threads=threads, model=model), hashlib.sha256(model).hexdigest()


def _make_session(path: Path, *, threads: int, model: bytes | None = None) -> ort.InferenceSession:
    """Open the model at ``path`` (or its bytes ``model``, already read from there)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    try:
        source = model if model is not None else str(path)
        session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's Fail/InvalidGraph are not importable types
        raise EmbeddingError(f"cannot load embedding model {path}: {exc}") from exc
    logger.info("loaded embedding model %s (%s threads)", path.name, threads)
    return session


def _pool_and_normalise(
    output: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]
) -> npt.NDArray[np.float32]:
    """Mean-pool token states over the mask (if not pooled already), then L2-normalise."""
    if output.ndim == 3:  # last_hidden_state: (batch, tokens, dim)
        weights = mask[..., None].astype(np.float32)
        pooled = (output * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    else:  # sentence_embedding: (batch, dim)
        pooled = output
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    unit: npt.NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
    return unit


def _quantize(source: Path, target: Path) -> None:
    """Write a dynamically int8-quantized copy of the model ``source`` to ``target``."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logger.info("building dynamically quantized embedding model at %s", target)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".quantize-") as work:
        folded = Path(work) / "folded.onnx"
        quantized = Path(work) / "quantized.onnx"
        # The packaged graph computes fp32 weights as Cast(int8) * scale at run
        # time; quantize_dynamic only quantizes MatMuls whose weights are
        # constants, so let onnxruntime fold those casts first.
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        # Per-channel scales keep cosine ~0.994 to the packaged model; per-tensor
        # scales measured ~0.957, too far to be worth it.
        quantize_dynamic(
            folded,
            quantized,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            weight_type=QuantType.QInt8,
        )
        os.replace(quantized, target)


_scorer: ort.InferenceSession | None = None
_scorer_lock = threading.Lock()


def int8_scores(
    query: npt.NDArray[np.uint8], matrix: npt.NDArray[np.int8]
) -> npt.NDArray[np.int32]:
    """Return ``query @ matrix``: a uint8 vector (D) times an int8 matrix (D x N), in int32.

    ``query`` must stay below 128: the x86 u8 x s8 instruction adds pairs of
    products into saturating int16, which 255 x 127 x 2 overflows (measured:
    wrong sums), while 127 x 127 x 2 fits.

    For the search's dense scan over int8 vectors (`assistant.retrieval.dense`):
    onnxruntime's MatMulInteger has a u8 x s8 kernel that multiplies and adds in
    registers, where numpy converts every block to a wider type first (measured
    4-5x faster than numpy's float32 scan, which reads 4x the bytes). One
    thread, no spinning: questions run side by side on few cores. Thread-safe.
    """
    if query.size and int(query.max()) > 127:
        raise ValueError("int8_scores: query values must be below 128")
    session = _scorer_session()
    out = session.run(None, {"q": query.reshape(1, -1), "m": matrix})[0]
    scores: npt.NDArray[np.int32] = out.reshape(-1)
    return scores


def _scorer_session() -> ort.InferenceSession:
    global _scorer
    with _scorer_lock:
        if _scorer is None:
            _scorer = _make_scorer()
        return _scorer


def _make_scorer() -> ort.InferenceSession:
    import onnxruntime as ort
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["q", "m"], ["s"])],
        "int8-scores",
        [
            helper.make_tensor_value_info("q", TensorProto.UINT8, [1, "d"]),
            helper.make_tensor_value_info("m", TensorProto.INT8, ["d", "n"]),
        ],
        [helper.make_tensor_value_info("s", TensorProto.INT32, [1, "n"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # what onnxruntime >= 1.20 reads
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
