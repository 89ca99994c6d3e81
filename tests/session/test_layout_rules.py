"""The rules of the session stage (`docs/architecture.md`), checked over the package's source.

The parsing helpers are those of `tests/test_layout.py`, so every import counts the same way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tests.support.paths import ROOT
from tests.test_layout import DOORS, imports, module_imports, modules

# Each factory and the modules that may call it: the composition root, and the ingest
# command for the writer's embedder.
FACTORIES = {
    "open_retriever": {"assistant.session.stack"},
    "build_assistant": {"assistant.session.stack"},
    "open_audit_log": {"assistant.session.stack"},
    "make_embedder": {"assistant.session.stack", "assistant.cli.ingest"},
}


# The command line's launchers start the other two doors (``ui.py``, ``serve --api [--ui]``,
# ``keys``): they start them, nothing more.
LAUNCHERS = {"assistant.cli.serve", "assistant.cli.api"}


def door_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in DOORS else ""


def test_no_door_imports_another() -> None:
    crossing = [
        f"{name}:{line} imports {target}"
        for name, found in module_imports(runtime_only=False)
        if door_of(name) and name not in LAUNCHERS
        for target, line in found
        if door_of(target) and door_of(target) != door_of(name)
    ]
    assert crossing == []


def test_the_door_check_sees_a_door_importing_another() -> None:
    assert door_of("assistant.api.protocol") == "api"
    assert door_of("assistant.web.format") == "web"
    assert door_of("assistant.session.sources") == ""


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


# The access check outside search lives in session.visibility; types defines it (and
# a change's visibility, which is two audiences read by it).
MAY_READ_OWNERS = ("assistant.retrieval.", "assistant.session.", "assistant.types")


def test_user_may_read_is_called_only_in_retrieval_and_session() -> None:
    outside = [
        f"{name}:{line}"
        for name, tree in modules()
        for called, line in called_names(tree)
        if called == "may_read" and not name.startswith(MAY_READ_OWNERS)
    ]
    assert outside == []


# What a door holds of an answer or a search: it reads their declared fields, never
# probes them for more.
PROBED = ("stream", "searcher", "run", "inner", "retriever", "service")


def probes(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """Yield ``(object, line)`` of each ``getattr(object, ...)`` on a stream or searcher."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and node.args
            and isinstance(node.args[0], ast.Name)
            and any(word in node.args[0].id for word in PROBED)
        ):
            yield node.args[0].id, node.lineno


# The command line's administrator commands answer no question (their "stream" is a
# terminal's).
ADMIN_COMMANDS = {"assistant.cli.ingest", "assistant.cli.audit", "assistant.cli.report"}


def test_no_door_probes_a_stream_or_a_searcher_with_getattr() -> None:
    found = [
        f"{name}:{line} getattr({target}, ...)"
        for name, tree in modules()
        if door_of(name) and name not in ADMIN_COMMANDS
        for target, line in probes(tree)
    ]
    assert found == []


def test_the_probe_check_sees_getattr_on_a_stream() -> None:
    tree = ast.parse("def f(stream):\n    return getattr(stream, 'reasoning', '')\n")
    assert list(probes(tree)) == [("stream", 2)]
    assert list(probes(ast.parse("getattr(request, 'session_hash', None)"))) == []


# A door reaches the core through session only (and the foundation), but for these, each
# justified in a line; the list may only shrink (an entry no longer needed fails the test).
JUSTIFIED = {
    # The viewer renders the documents themselves.
    "assistant.web.viewer": {"assistant.documents"},
    # The recent-changes panel reads the change list the ingest writes beside the index.
    "assistant.web.changes": {"assistant.index"},
    # The administrator commands run their own stage (audit log, reports, the writer).
    "assistant.cli.audit": {"assistant.audit", "assistant.index"},
    "assistant.cli.ingest": {"assistant.embeddings", "assistant.index"},
    "assistant.cli.report": {"assistant.audit", "assistant.index"},
    "assistant.cli.sync": {"assistant.sync"},
    # The evaluation sweeps re-index and score retrieval and answers stage by stage.
    "assistant.cli.evaluate": {"assistant.answering", "assistant.index", "assistant.retrieval"},
}
CORE = ("documents", "chunking", "embeddings", "index", "sync", "retrieval", "answering", "audit")


def core_reached() -> dict[str, set[str]]:
    """Door module -> the core stages it imports (past session)."""
    reached: dict[str, set[str]] = {}
    for name, found in module_imports(runtime_only=False):
        if not door_of(name):
            continue
        for target, _ in found:
            parts = target.split(".")
            if parts[0] == "assistant" and len(parts) > 1 and parts[1] in CORE:
                reached.setdefault(name, set()).add(f"assistant.{parts[1]}")
    return reached


def test_the_doors_reach_the_core_only_through_session() -> None:
    reached = core_reached()
    beyond = {name: stages - JUSTIFIED.get(name, set()) for name, stages in reached.items()}
    assert {name: stages for name, stages in beyond.items() if stages} == {}
    stale = {name: stages - reached.get(name, set()) for name, stages in JUSTIFIED.items()}
    assert {name: stages for name, stages in stale.items() if stages} == {}


# Rule 1 of the funnel: a door imports the package face, never a module of the session.
def test_the_doors_import_the_session_face_only() -> None:
    inside = [
        f"{name}:{line} imports {target}"
        for name, found in module_imports(runtime_only=False)
        if door_of(name)
        for target, line in found
        if target.startswith("assistant.session.")
    ]
    assert inside == []


def test_the_face_check_sees_a_module_import() -> None:
    tree = ast.parse("from assistant.session.turn import Outcome\nimport assistant.session\n")
    found = [target for target, _ in imports(tree, runtime_only=False)]
    assert [t for t in found if t.startswith("assistant.session.")] == ["assistant.session.turn"]


# Rule 2: the texts the core writes (labels, the no-match wording) are the core's; a door
# gets their parts as data (`Outcome.banner`, `closest`, `no_match_reason`) and words them.
CORE_TEXTS = {
    "EXTRACTIVE_LABEL",
    "FALLBACK_LABEL",
    "FALLBACK_NOTE",
    "NOTHING_FOUND",
    "NO_MATCH_OPENING",
    "NO_MATCH_OUTRO",
    "NOT_COVERED_REASON",
    "MODE_BANNERS",
}


def named_texts(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """Yield ``(name, line)`` of each core text a module imports or names."""
    for node in ast.walk(tree):
        if isinstance(node, ast.alias) and node.name in CORE_TEXTS:
            yield node.name, node.lineno
        elif isinstance(node, ast.Name | ast.Attribute):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name in CORE_TEXTS:
                yield name, node.lineno


def test_no_door_names_a_text_the_core_wrote() -> None:
    named = [
        f"{name}:{line} {text}"
        for name, tree in modules()
        if door_of(name)
        for text, line in named_texts(tree)
    ]
    assert named == []


def test_the_text_check_sees_an_import_and_a_use() -> None:
    tree = ast.parse("from x import FALLBACK_LABEL as F\nprint(service.NO_MATCH_OPENING)\n")
    assert sorted(named_texts(tree)) == [("FALLBACK_LABEL", 1), ("NO_MATCH_OPENING", 2)]


# Rule 4: the modules over 400 lines, to be split by concept; the list may only shrink.
LONG_MODULES = {
    "assistant/answering/answerability.py",
    "assistant/answering/evaluation.py",
    "assistant/answering/llm.py",
    "assistant/answering/ranking.py",
    "assistant/answering/safety.py",
    "assistant/answering/service.py",
    "assistant/answering/units.py",
    "assistant/api/server.py",
    "assistant/config.py",
    "assistant/documents/markdown.py",
    "assistant/documents/pdf.py",
    "assistant/embeddings/local.py",
    "assistant/index/chroma.py",
    "assistant/index/ingest.py",
    "assistant/retrieval/retriever.py",
    "assistant/retrieval/view.py",
    "assistant/types.py",
}
MAX_LINES = 400


def long_modules() -> set[str]:
    """Return the package's modules over `MAX_LINES` lines, as paths from the root."""
    return {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "assistant").rglob("*.py")
        if len(path.read_text(encoding="utf-8").splitlines()) > MAX_LINES
    }


def test_no_module_grows_past_400_lines_and_the_long_list_only_shrinks() -> None:
    found = long_modules()
    assert found - LONG_MODULES == set(), "split the module by concept"
    assert LONG_MODULES - found == set(), "it is short now: take it off LONG_MODULES"
