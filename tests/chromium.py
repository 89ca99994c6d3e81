"""Debian's chromium for browser tests: where it is, how to start it, when to skip."""

from __future__ import annotations

from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")

# Headless as root, and without the background services that would try to reach
# the internet (this machine has none, and a test must not leave 127.0.0.1).
LAUNCH_ARGS = [
    "--no-sandbox",
    "--headless=new",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

browser_marks = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="/usr/bin/chromium is missing (apt-get install chromium)"
    ),
]
