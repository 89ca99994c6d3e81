"""Debian's chromium for browser tests: where it is, how to start it, when to skip."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


@contextlib.contextmanager
def launched_chromium() -> Iterator[Any]:
    """Start Debian's chromium through Playwright (skip without Playwright); close it after."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def expect(locator: Any, *, timeout_ms: float = 20_000) -> Any:
    """Playwright's auto-retrying assertions on ``locator`` (they re-read until they hold).

    Gradio may re-render an element between a wait and a read; these re-read it until the
    condition holds or ``timeout_ms`` (the pages' own limit) is over.
    """
    sync_api = pytest.importorskip("playwright.sync_api")
    sync_api.expect.set_options(timeout=timeout_ms)
    return sync_api.expect(locator)


def open_page(opener: Any, *, timeout_ms: float = 20_000) -> Any:
    """Open a page of a browser (in a fresh context of its own) or of a given context.

    Every wait on it gives up after ``timeout_ms``: a test fails, it does not hang.
    """
    page = opener.new_page()
    page.set_default_timeout(timeout_ms)
    return page
