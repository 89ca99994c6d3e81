"""Run llama.cpp's OpenAI-compatible server (``xllamacpp``) until terminated.

A script, not a module of the suite: ``tests.support.llama_server.LlamaServer`` starts it
with the test-only venv's python (``.venv-llm``, scripts/setup_llm.sh), where
``xllamacpp`` is installed; it imports nothing from the project. llama.cpp writes its log
to stderr; once the server listens this script prints ``READY <url>`` on stdout, the
port being the one the OS chose (``--port 0``), so no two servers race for a port.

    .venv-llm/bin/python tests/support/llama_serve.py --model FILE.gguf --alias NAME
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

import xllamacpp


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--alias", required=True, help="the model name clients ask for")
    parser.add_argument("--n-ctx", type=int, default=4096, help="the context window, tokens")
    parser.add_argument("--threads", type=int, default=1, help="threads for prompt and eval")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port the OS picks")
    return parser.parse_args(argv)


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}  # a set of names: a bare string would be its letters
    params.n_ctx = args.n_ctx
    # One thread by default: llama.cpp's threads spin at each barrier, and two of them on
    # two cores that other processes also use ran 30 times slower than one (measured).
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.hostnames = [args.host]
    params.port = args.port
    params.offline = True  # never reach for a model hub
    params.warmup = False  # the first request warms it; start-up stays under a second
    server = xllamacpp.Server(params)  # returns once the model is loaded and it listens
    print(f"READY {server.listening_address}", flush=True)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    signal.signal(signal.SIGINT, lambda *_: stopped.set())
    stopped.wait()


if __name__ == "__main__":
    main(sys.argv[1:])
