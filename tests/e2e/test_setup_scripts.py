"""What ./start.sh and ./test.sh install: the app alone, or the app with its test tools."""

from __future__ import annotations

import importlib.metadata as metadata
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from tests.conftest import ROOT
from tests.test_layout import OWNERS

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]
TEST_TOOLS = {"pytest", "mypy", "ruff", "playwright", "langchain-text-splitters", "hypothesis"}


def names(requirements: list[str]) -> set[str]:
    return {_canonical(Requirement(r).name) for r in requirements}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(requirements: list[str]) -> set[str]:
    """Return the distributions ``requirements`` install, following installed metadata.

    Extras of the dependencies are not followed, so this is at most what pip installs.
    """
    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        requirement = todo.pop()
        name = _canonical(requirement.name)
        if name in seen or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        todo += [
            Requirement(r)
            for r in metadata.requires(requirement.name) or []
            if not (Requirement(r).marker and "extra" in str(Requirement(r).marker))
        ]
    return seen


def test_start_installs_the_app_and_test_installs_the_tools_too() -> None:
    assert "scripts/setup.sh app" in (ROOT / "start.sh").read_text()
    assert "scripts/setup.sh dev" in (ROOT / "test.sh").read_text()
    app = names(EXTRAS["ui"] + EXTRAS["plot"])
    assert "gradio" in app
    assert "matplotlib" in app
    assert not app & TEST_TOOLS
    # ./test.sh (CI) installs everything ./start.sh does, and the tools.
    assert app | TEST_TOOLS <= names(EXTRAS["dev"])


def test_every_library_the_app_imports_comes_with_the_app_install() -> None:
    installed = closure(PROJECT["dependencies"] + EXTRAS["ui"] + EXTRAS["plot"])
    assert not installed & TEST_TOOLS
    providers = metadata.packages_distributions()
    for module in OWNERS:
        if module in sys.stdlib_module_names:
            continue  # sqlite3: one owner all the same, but no package to install
        assert {_canonical(d) for d in providers[module]} & installed, module


def fake_checkout(tmp_path: Path, stamp: str | None) -> Path:
    """A copy of the files setup.sh reads, with a .venv whose python only logs its arguments."""
    for name in ("pyproject.toml", "requirements.lock", "scripts/setup.sh"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    (tmp_path / "scripts" / "setup.sh").chmod(0o755)
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path}/pip.log\n')
    python.chmod(0o755)
    if stamp:
        digest = subprocess.run(
            "cat pyproject.toml requirements.lock | sha256sum | cut -c1-16",
            shell=True,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        (tmp_path / ".venv" / f".installed-{digest}-{stamp}").touch()
    return tmp_path


def setup(checkout: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["scripts/setup.sh", *args],
        cwd=checkout,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": "false"},
        timeout=60,
        check=False,
    )


def test_setup_installs_the_extras_asked_for_and_says_so(tmp_path: Path) -> None:
    checkout = fake_checkout(tmp_path, stamp=None)
    ran = setup(checkout, "app")
    assert ran.returncode == 0, ran.stderr
    assert "setup: installing the assistant and its packages" in ran.stderr
    assert ran.stdout == ""
    log = (checkout / "pip.log").read_text()
    assert "-c requirements.lock -e .[ui,plot]" in log
    assert "[dev]" not in log


def test_a_dev_install_serves_start_but_an_app_install_does_not_serve_test(
    tmp_path: Path,
) -> None:
    after_test = fake_checkout(tmp_path / "a", stamp="dev")
    assert setup(after_test, "app").returncode == 0
    assert not (after_test / "pip.log").exists()  # nothing to install

    after_start = fake_checkout(tmp_path / "b", stamp="app")
    assert setup(after_start, "app").returncode == 0
    assert not (after_start / "pip.log").exists()
    assert setup(after_start, "dev").returncode == 0
    assert "-e .[dev]" in (after_start / "pip.log").read_text()
    assert [p.name.rsplit("-", 1)[1] for p in (after_start / ".venv").glob(".installed-*")] == [
        "dev"
    ]


def test_setup_refuses_an_unknown_target(tmp_path: Path) -> None:
    ran = setup(fake_checkout(tmp_path, stamp=None), "everything")
    assert ran.returncode == 2
    assert "usage: scripts/setup.sh [app|dev|local-llm [0.5b|1.5b]]" in ran.stderr
