#!/usr/bin/env bash
# Create .venv and install the project with its test tools, at the exact versions in
# requirements.lock. Safe to run twice: it reinstalls only when pyproject.toml or the
# lock changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.installed-$(cat pyproject.toml requirements.lock | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -c requirements.lock -e '.[dev]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi
