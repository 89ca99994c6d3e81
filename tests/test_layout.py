"""The shape of the package: imports run down the stage order, one owner per outside library.

The order is the one of `docs/architecture.md`:
foundation < documents < chunking < embeddings < index < retrieval < answering < audit < web
< api < cli.
Every import counts, also those inside functions and under ``TYPE_CHECKING``, except the
vendor rule, which ignores type-only imports (they load nothing at run time).
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.paths import ROOT

PACKAGE = ROOT / "assistant"
STAGES = (
    "foundation",
    "documents",
    "chunking",
    "embeddings",
    "index",
    "retrieval",
    "answering",
    "audit",
    "web",
    "api",
    "cli",
)
FOUNDATION = {"types", "errors", "config", "protocols", "tokens", "words", "openai_api", "users"}
# Each outside library and the one module allowed to import it (starlette: the chat's
# routes and the API's server are two servers, each owning its routes). An owner ending
# in ".*" is a package: gradio belongs to the browser stage, split by concept.
OWNERS: dict[str, str | tuple[str, ...]] = {
    "chromadb": "assistant.index.chroma",
    "httpx": "assistant.index.chroma",
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


def modules() -> list[tuple[str, ast.Module]]:
    return [
        (module_name(p), ast.parse(p.read_text(encoding="utf-8")))
        for p in sorted(PACKAGE.rglob("*.py"))
    ]


def stage_of(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:  # the package itself re-exports the foundation
        return 0
    if parts[1] in FOUNDATION or parts[1] == "__main__":
        return STAGES.index("cli") if parts[1] == "__main__" else 0
    return STAGES.index(parts[1])


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


def test_the_folder_tree_is_the_pipeline() -> None:
    top = {p.name for p in PACKAGE.iterdir() if not p.name.startswith((".", "__pycache__"))}
    packages = {p for p in top if (PACKAGE / p).is_dir()}
    assert packages == set(STAGES[1:])
    loose = {Path(p).stem for p in top if p.endswith(".py")} - {"__init__", "__main__"}
    assert loose == FOUNDATION


def test_imports_run_down_the_stage_order() -> None:
    upward = []
    for name, tree in modules():
        for target, line in imports(tree, runtime_only=False):
            if target.startswith("assistant.") and stage_of(target) > stage_of(name):
                upward.append(f"{name}:{line} imports {target}")
    assert upward == []


def test_answering_reaches_retrieval_only_through_the_searcher_protocol() -> None:
    reached = [
        f"{name}:{line} imports {target}"
        for name, tree in modules()
        if name.startswith("assistant.answering")
        for target, line in imports(tree, runtime_only=False)
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
            for name, tree in modules()
            for target, _ in imports(tree, runtime_only=True)
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
