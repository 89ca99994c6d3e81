"""The wheel as ``pip install .`` builds it: every module inside, and a non-editable install
that ingests and searches (no checkout on sys.path)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

# What ``ingest.py`` runs, without putting the checkout (and its ``assistant/``) on sys.path.
INGEST = "import sys; from assistant.cli import ingest_main; raise SystemExit(ingest_main())"


ONE_OF_EACH_KIND = (
    "loan-policy.md",
    "credit-committee-procedures.pdf",
    "member-dividend-policy.docx",
    "mobile-banking-terms.html",
    "office-hours-and-holidays.txt",
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the project's wheel exactly as ``pip install .`` would (no editable install)."""
    out = tmp_path_factory.mktemp("wheel")
    build = ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(out)]
    subprocess.run(
        [sys.executable, "-m", "pip", *build, str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (found,) = out.glob("policy_assistant-*.whl")
    return found


@pytest.mark.slow
def test_the_wheel_holds_every_module(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        shipped = {n for n in archive.namelist() if n.startswith("assistant/")}
    expected = {p.relative_to(ROOT).as_posix() for p in (ROOT / "assistant").rglob("*.py")}
    assert expected - shipped == set()
    assert "assistant/py.typed" in shipped


@pytest.mark.slow
def test_a_non_editable_install_ingests_and_searches(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # The wheel goes in as a real install; its dependencies come from this test's
    # environment through a path entry (which runs no .pth file of it, so the
    # project's editable install cannot shadow the wheel).
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", site, str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    deps = next(p for p in sys.path if p.endswith("site-packages"))
    (Path(site) / "project-deps.pth").write_text(deps + "\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    # One document of each kind the loaders read: every format module of the wheel runs,
    # and the real embedding model embeds a few chunks rather than the whole sample set.
    docs = work / "docs"
    docs.mkdir()
    for name in ONE_OF_EACH_KIND:
        shutil.copy(ROOT / "data" / "policies" / name, docs / name)
    env = {**os.environ, "ASSISTANT_INDEX": str(work / "index"), "PYTHONPATH": ""}
    where = subprocess.run(
        [str(python), "-c", "import assistant.cli.ingest as m; print(m.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=work,
        env=env,
    ).stdout
    assert where.startswith(site), where
    ingest = subprocess.run(
        [str(python), "-c", INGEST, str(docs), "--json"],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        timeout=600,
    )
    assert ingest.returncode == 0, ingest.stderr[-2000:]
    summary = json.loads(ingest.stdout)
    assert summary["counts"]["failed"] == 0
    assert sorted(summary["documents"]["added"]) == sorted(ONE_OF_EACH_KIND)
    search = subprocess.run(
        [str(python), "-m", "assistant", "search", "What is the emergency loan interest rate?"],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        timeout=300,
    )
    assert search.returncode == 0, search.stderr[-2000:]
    assert "loan-policy.md" in search.stdout
