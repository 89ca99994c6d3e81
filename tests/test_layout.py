"""The shape of the package: imports run down the stage order, one owner per outside library.

The order is the one of `docs/architecture.md`:
foundation < documents < chunking < embeddings < index < sync < retrieval < answering < audit
< session < {web, api, cli}: the three doors are siblings of one rank (the session rules are in
`tests/session/test_layout_rules.py`).
Every import counts, also those inside functions and under ``TYPE_CHECKING``, except the
vendor rule, which ignores type-only imports (they load nothing at run time).
"""

from __future__ import annotations

import ast
import functools
import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import assistant
from tests.support.paths import ROOT

PACKAGE = ROOT / "assistant"
STAGES = (
    "foundation",
    "documents",
    "chunking",
    "embeddings",
    "index",
    "sync",
    "retrieval",
    "answering",
    "audit",
    "session",
    "web",
    "api",
    "cli",
)
DOORS = ("web", "api", "cli")
FOUNDATION = {"types", "errors", "config", "protocols", "tokens", "words", "openai_api", "users"}
# Each outside library and the one module allowed to import it (starlette: the chat's
# routes and the API's server are two servers, each owning its routes). An owner ending
# in ".*" is a package: gradio belongs to the browser stage, split by concept.
OWNERS: dict[str, str | tuple[str, ...]] = {
    "chromadb": "assistant.index.chroma",
    # Chroma's transport, and Microsoft Graph's (the SharePoint sync).
    "httpx": ("assistant.index.chroma", "assistant.sync.graph"),
    "msal": "assistant.sync.auth",
    "openai": "assistant.openai_api",
    "gradio": "assistant.web.*",
    "fastapi": "assistant.web.routes",
    "starlette": ("assistant.api.server", "assistant.web.routes"),
    "uvicorn": "assistant.api.server",
    "tiktoken": "assistant.tokens",
    "markdown_it": "assistant.documents.markdown",
    "onnxruntime": "assistant.embeddings.local",
    "onnx": "assistant.embeddings.local",
    "tokenizers": "assistant.embeddings.local",
    "bm25s": "assistant.retrieval.lexical",
    "Stemmer": "assistant.retrieval.lexical",
    "pypdf": "assistant.documents.pdf",
    "pdfplumber": "assistant.documents.pdf",
    "docx": "assistant.documents.docx",
    "bs4": "assistant.documents.html",
    "yaml": "assistant.documents.frontmatter",
    "charset_normalizer": "assistant.documents.decode",
    "filelock": "assistant.index.lock",
    "tqdm": "assistant.cli.ingest",
    # stdlib, but one module owns the audit database all the same.
    "sqlite3": "assistant.audit.store",
    "matplotlib": "assistant.cli._charts",
    "bcrypt": "assistant.users",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def modules() -> tuple[tuple[str, ast.Module], ...]:
    """Every module of the package, parsed once per session (the tests only read the trees)."""
    return tuple(
        (module_name(p), ast.parse(p.read_text(encoding="utf-8")))
        for p in sorted(PACKAGE.rglob("*.py"))
    )


def stage_of(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:  # the package itself re-exports the foundation
        return 0
    if parts[1] in FOUNDATION or parts[1] == "__main__":
        return STAGES.index("web") if parts[1] == "__main__" else 0
    return STAGES.index("web" if parts[1] in DOORS else parts[1])


def imports(tree: ast.Module, *, runtime_only: bool) -> Iterator[tuple[str, int]]:
    """Yield ``(imported module, line)``; skip ``if TYPE_CHECKING:`` bodies if asked."""
    skipped: set[int] = set()
    if runtime_only:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "assistant":
                yield from ((f"assistant.{a.name}", node.lineno) for a in node.names)
            else:
                yield node.module, node.lineno


@functools.cache
def module_imports(*, runtime_only: bool) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
    """``(module, its imports)`` for every module, walked once per session for each kind."""
    return tuple(
        (name, tuple(imports(tree, runtime_only=runtime_only))) for name, tree in modules()
    )


def test_the_folder_tree_is_the_pipeline() -> None:
    top = {p.name for p in PACKAGE.iterdir() if not p.name.startswith((".", "__pycache__"))}
    packages = {p for p in top if (PACKAGE / p).is_dir()}
    assert packages == set(STAGES[1:])
    loose = {Path(p).stem for p in top if p.endswith(".py")} - {"__init__", "__main__"}
    assert loose == FOUNDATION


def test_imports_run_down_the_stage_order() -> None:
    upward = []
    for name, found in module_imports(runtime_only=False):
        for target, line in found:
            if target.startswith("assistant.") and stage_of(target) > stage_of(name):
                upward.append(f"{name}:{line} imports {target}")
    assert upward == []


def test_answering_reaches_retrieval_only_through_the_searcher_protocol() -> None:
    reached = [
        f"{name}:{line} imports {target}"
        for name, found in module_imports(runtime_only=False)
        if name.startswith("assistant.answering")
        for target, line in found
        if target.startswith(("assistant.retrieval", "assistant.index"))
    ]
    assert reached == []


def test_importing_assistant_loads_no_stage() -> None:
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    targets = {t for t, _ in imports(tree, runtime_only=False)}
    assert {stage_of(t) for t in targets if t.startswith("assistant")} == {0}


@pytest.mark.parametrize("library", sorted(OWNERS))
def test_each_outside_library_has_one_owner(library: str) -> None:
    importers = sorted(
        {
            name
            for name, found in module_imports(runtime_only=True)
            for target, _ in found
            if target == library or target.startswith(library + ".")
        }
    )
    owners = OWNERS[library]
    named = [owners] if isinstance(owners, str) else list(owners)
    if any(owner.endswith(".*") for owner in named):
        packages = tuple(owner[:-1] for owner in named)
        assert importers, library
        assert [name for name in importers if not name.startswith(packages)] == []
    else:
        assert importers == sorted(named)


def test_the_layering_check_sees_an_upward_import() -> None:
    tree = ast.parse("def f():\n    from assistant.web.ui import build_demo\n")
    found = [t for t, _ in imports(tree, runtime_only=False)]
    assert found == ["assistant.web.ui"]
    assert stage_of("assistant.web.ui") > stage_of("assistant.answering.service")


def test_every_file_kind_is_a_format_module_with_a_load_function() -> None:
    from assistant.documents.loading import _KINDS

    for kind in sorted(set(_KINDS.values())):
        module = importlib.import_module(f"assistant.documents.{kind}")
        assert callable(module.load), kind


MAX_FUNCTION_LINES = 80


def test_no_function_is_over_80_lines() -> None:
    long = [
        f"{name}.{node.name}: {node.end_lineno - node.lineno + 1} lines"
        for name, tree in modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (function-level and type-only too).

    ``from assistant.x import name`` counts as importing ``assistant.x`` when ``name`` is
    no module; a package's own ``__init__`` is not counted as imported by its modules.
    """
    known = {name for name, _ in modules()}

    def resolve(target: str) -> str:
        while target and target not in known:
            target = target.rpartition(".")[0]
        return target

    return {
        name: {
            module
            for target, _ in found
            if target.startswith("assistant.") and (module := resolve(target)) not in ("", name)
        }
        for name, found in module_imports(runtime_only=False)
    }


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in order:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], order[nxt])
        if low[node] == order[node]:
            group = []
            while (member := stack.pop()) != node:
                group.append(member)
            group.append(node)
            if len(group) > 1:
                circles.append(sorted(group))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return circles


def test_no_import_circle_in_the_package() -> None:
    assert import_circles(import_graph()) == []


def test_the_circle_check_sees_a_circle_through_a_function_level_import() -> None:
    tree = ast.parse("def f():\n    from assistant.cli.audit import run_command\n")
    assert [t for t, _ in imports(tree, runtime_only=False)] == ["assistant.cli.audit"]
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_circles(graph) == [["a", "b", "c"]]
    assert import_circles({"a": {"b"}, "b": set()}) == []


def test_the_tests_mirror_the_packages() -> None:
    tests = ROOT / "tests"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert set(STAGES[1:]) <= folders  # one tests folder per package of assistant/
    assert folders - set(STAGES[1:]) <= {"e2e", "support"}
    loose = sorted(p.name for p in tests.glob("test_*.py"))
    assert len(loose) <= 5, loose


def test_import_loads_no_vendor_library_and_touches_nothing() -> None:
    probe = (
        "import json, os, sys; before = set(os.listdir('.')); import assistant; "
        "heavy = ['gradio', 'chromadb', 'openai', 'onnxruntime', 'tiktoken', 'markdown_it'];"
        "print(json.dumps({'loaded': [m for m in heavy if m in sys.modules],"
        " 'created': sorted(set(os.listdir('.')) - before)}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert json.loads(out.stdout) == {"loaded": [], "created": []}


def test_every_exported_name_exists() -> None:
    assert sorted(assistant.__all__) == assistant.__all__
    for name in assistant.__all__:
        assert hasattr(assistant, name), name
