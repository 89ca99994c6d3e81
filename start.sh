#!/usr/bin/env bash
# Set up, index the sample policies and start the chat UI on http://127.0.0.1:7860
# Extra arguments go to ui.py (for example --port 8000).
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
.venv/bin/python ingest.py data/policies --index "${ASSISTANT_INDEX:-index}"
exec .venv/bin/python ui.py --index "${ASSISTANT_INDEX:-index}" "$@"
