#!/usr/bin/env bash
# Set up and run every check: ruff, mypy (strict) and the whole pytest suite,
# including the Chroma-server, OpenAI-protocol and browser tests.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh dev  # the app with its test, lint and benchmark tools (.[dev])
scripts/setup_llm.sh  # test-only: llama.cpp's server and a small model (.venv-llm)
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  # The browser tests drive Debian's chromium; install it when we can.
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
