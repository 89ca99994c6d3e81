"""Indexed names with ":" or "\\" open in the document viewer; others stay refused (D13).

One app is served for the module; the last test follows the links in Chromium.
"""

from __future__ import annotations

import html as html_module
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant.index.ingest import ingest
from assistant.web.format import doc_link
from tests.conftest import FakeEmbedder
from tests.support.chromium import CHROMIUM, launched_chromium
from tests.support.hit_factory import make_hit
from tests.support.served_ui import app_settings, launched
from tests.support.tiny_corpus import write_docs

ODD_NAMES = {
    "colon:parking.md": "# Colon parking\n\nParking permits for colon staff.\n",
    "back\\slash.md": "# Backslash rules\n\nBackslash staff park on level three.\n",
    "HR: leave policy.md": "# HR leave\n\nStaff get 25 days of annual leave.\n",
    "javascript:alert('x').md": "# Script name\n\nA harmless document with a scary name.\n",
}


@pytest.fixture(scope="module")
def odd_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    base = tmp_path_factory.mktemp("odd")
    docs = write_docs(base / "docs", ODD_NAMES)
    (docs / "draft:secret.md").write_text("# Draft\n\nNever indexed.\n", encoding="utf-8")
    settings = app_settings(base / "idx")
    report = ingest([docs / name for name in ODD_NAMES], settings=settings, embedder=FakeEmbedder())
    assert not report.problems
    with launched(settings, docs, ingest_first=False) as served:
        yield served.url, docs


def viewer_status(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        return error.code, ""


def test_every_indexed_source_opens_at_its_sources_link(odd_app: tuple[str, Path]) -> None:
    """D13: the "open section" link of each source with ":" or "\\" answers 200 with its text."""
    url, _ = odd_app
    for source, text in ODD_NAMES.items():
        link = doc_link(make_hit(1, "x", source=source, anchor="top"))
        status, page = viewer_status(url + link)
        assert status == 200, (source, link)
        assert html_module.escape(text.splitlines()[2]) in page


@pytest.mark.parametrize(
    "path",
    [
        "draft:secret.md",
        "draft%3Asecret.md",
        "..%5C..%5Cetc%5Cpasswd",
        "C:%5Cwindows",
        "a%5C..%5Cb",
    ],
)
def test_names_with_colons_or_backslashes_outside_the_catalog_stay_refused(
    odd_app: tuple[str, Path], path: str
) -> None:
    """D13 control: only catalog sources get the wider character set."""
    url, _ = odd_app
    assert viewer_status(f"{url}/doc/{path}")[0] == 404


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is missing")
def test_chromium_opens_the_viewer_links_of_odd_names(odd_app: tuple[str, Path]) -> None:
    """D13 in the real browser: Chromium follows each link as the Sources panel writes it."""
    url, _ = odd_app
    with launched_chromium() as browser:
        page = browser.new_page()
        for source, text in ODD_NAMES.items():
            link = doc_link(make_hit(1, "x", source=source, anchor="top"))
            response = page.goto(url + link, wait_until="load")
            assert response is not None
            assert response.status == 200, (source, link)
            assert text.splitlines()[2] in page.inner_text("body")
