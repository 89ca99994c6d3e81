#!/usr/bin/env bash
# Set up, index the sample policies and start the chat UI on http://127.0.0.1:7860
# Extra arguments go to ui.py (for example --port 8000). Installs only what the app
# needs (scripts/setup.sh app); ./test.sh adds the test and benchmark tools.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh app
index=${ASSISTANT_INDEX:-index}
echo "Indexing data/policies into $index/ (only changed documents are embedded)..."
# The summary without a line per document added, changed or removed (problems stay).
.venv/bin/python ingest.py data/policies --index "$index" | grep -v -E '^  (added|changed|removed): '
echo "Starting the chat..."
exec .venv/bin/python ui.py --index "$index" "$@"
