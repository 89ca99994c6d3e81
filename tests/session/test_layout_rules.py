"""The rules of the session stage (`docs/architecture.md`), checked over the package's source.

The parsing helpers are those of `tests/test_layout.py`, so every import counts the same way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tests.test_layout import modules

# Each factory and the modules that may call it: the composition root, and the ingest
# command for the writer's embedder.
FACTORIES = {
    "open_retriever": {"assistant.session.stack"},
    "build_assistant": {"assistant.session.stack"},
    "open_audit_log": {"assistant.session.stack"},
    "make_embedder": {"assistant.session.stack", "assistant.cli.ingest"},
}


def called_names(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """Yield ``(name, line)`` of each call of a plain name or an attribute."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                yield func.id, node.lineno
            elif isinstance(func, ast.Attribute):
                yield func.attr, node.lineno


def test_the_factories_are_called_only_in_the_stack() -> None:
    outside = [
        f"{name}:{line} calls {called}"
        for name, tree in modules()
        for called, line in called_names(tree)
        if called in FACTORIES and name not in FACTORIES[called]
    ]
    assert outside == []


def test_the_factory_check_sees_a_call_inside_a_function() -> None:
    tree = ast.parse("def f(s):\n    return factory.open_retriever(s, embedder=e)\n")
    assert ("open_retriever", 2) in list(called_names(tree))
