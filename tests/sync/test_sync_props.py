"""Any sequence of SharePoint changes and faults: the index is a fresh ingest of the drive.

Random edits, renames (to unsupported types too), moves, deletions, sharing changes
of files and folders, expired delta links (410), throttling and syncs that die part
way, each followed by a sync; after every sync that completed, the index must equal
a fresh ingest of the fake's state, audiences included, and every user must be able
to read exactly what the fake's grants allow. 8 x 25 examples (page sizes 1 to 4,
with and without public anonymous links).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.types import User
from tests.support.graph_server import FakeDrive, FakeGraph, group, link, user
from tests.sync.harness import Harness, allowed

pytestmark = pytest.mark.slow

NAMES = ("Leave.md", "Travel.txt", "Pay.html", "Notes.md", "Guide.MD", "logo.png")
TEXTS = (
    b"# Leave\n\nStaff receive 24 days of annual leave.\n",
    b"Travel: economy class for flights under six hours.\n",
    b"<html><body><h1>Pay</h1><p>Salaries are paid on the 25th.</p></body></html>",
    b"# Notes\n\n## Claims\n\nFile claims within 30 days.\n\n## Loans\n\nLoans at 12%.\n",
    b"   \n",  # no text: skipped by the ingest, never a problem
)
GRANTS = (
    (),
    (group("HR"),),
    (group("Finance Team"),),
    (user("Ann@contoso.example"),),
    (link("organization"),),
    (link("anonymous"),),
    (group("HR"), user("ann@contoso.example")),
)
PEOPLE = (
    User(),
    User(name="ann@contoso.example"),
    User(name="bob@contoso.example", groups=frozenset({"hr"})),
    User(name="carol@contoso.example", groups=frozenset({"finance-team"})),
    User(name="dave@contoso.example"),
    User(name="root", groups=frozenset({"admin"})),
)

change = st.one_of(
    st.tuples(
        st.just("add"), st.integers(0, 5), st.integers(0, 4), st.integers(0, 6), st.integers(0, 2)
    ),
    st.tuples(st.just("edit"), st.integers(0, 99), st.integers(0, 4)),
    st.tuples(st.just("rename"), st.integers(0, 99), st.integers(0, 5)),
    st.tuples(st.just("move"), st.integers(0, 99), st.integers(0, 2)),
    st.tuples(st.just("delete"), st.integers(0, 99)),
    st.tuples(st.just("share"), st.integers(0, 99), st.integers(0, 6)),
    st.tuples(st.just("share-folder"), st.integers(0, 1), st.integers(0, 6)),
)
# After each change: no sync yet, or a sync that is clean, meets an expired delta link,
# is throttled, or dies part way (at the request numbered by the integer).
then = st.tuples(st.sampled_from(("none", "clean", "410", "throttle", "crash")), st.integers(0, 12))
step = st.tuples(change, then)


@dataclass
class _Drive:
    drive: FakeDrive
    folders: tuple[str, str]

    def file(self, n: int) -> str | None:
        files = sorted(self.drive.files())
        return files[n % len(files)] if files else None

    def parent(self, n: int) -> str:
        return ("root", *self.folders)[n % 3]


def apply(state: _Drive, op: tuple[Any, ...]) -> None:
    drive, kind = state.drive, op[0]
    if kind == "add":
        _, name, text, grants, parent = op
        drive.add_file(
            NAMES[name], TEXTS[text], parent=state.parent(parent), grants=list(GRANTS[grants])
        )
        return
    if kind == "share-folder":
        drive.share(state.folders[int(op[1])], list(GRANTS[int(op[2])]))
        return
    target = state.file(int(op[1]))
    if target is None:
        return
    if kind == "edit":
        drive.edit(target, TEXTS[int(op[2])])
    elif kind == "rename":
        drive.rename(target, NAMES[int(op[2])])
    elif kind == "move":
        drive.move(target, state.parent(int(op[2])))
    elif kind == "delete":
        drive.delete(target)
    elif kind == "share":
        drive.share(target, list(GRANTS[int(op[2])]))


def sync(harness: Harness, state: _Drive, fault: str, at: int, *, public: bool) -> None:
    graph = harness.graph
    if fault == "410":
        state.drive.expire_links()
    elif fault in ("throttle", "crash"):
        graph.fail("pass", times=at)
        if fault == "throttle":
            graph.fail("429", retry_after=0)
            graph.fail("503", retry_after=0)
        else:
            graph.fail("500", times=3)  # past the two retries: the drive's sync fails
    report = harness.sync(sleep=lambda _: None, anonymous_links_public=public)
    graph.faults.clear()
    if not report.failures:
        check(harness, state)
        return
    # A sync that failed leaves the index behind the drive, but every document in it
    # still has its audience from SharePoint (none fell back to front matter or "everyone").
    sources = json.loads((harness.settings.store.path / "sharepoint" / ".sources.json").read_text())
    assert set(harness.indexed().docs) <= set(sources)


def check(harness: Harness, state: _Drive) -> None:
    seen = harness.indexed()
    assert seen == harness.fresh()
    for item_id, item in state.drive.files().items():
        source = next((s for s in seen.docs if s.startswith(f"hr/{item_id}.")), None)
        if source is None:
            continue  # an unsupported type or no text: in neither index
        for person in PEOPLE:
            expected = allowed(state.drive, item_id, person, public=harness.public)
            assert person.may_read(seen.audience(source)) == expected, (item.name, person)


@pytest.mark.parametrize("page_size", [1, 2, 3, 4])
@pytest.mark.parametrize("public", [False, True])
def test_the_index_is_always_a_fresh_ingest_of_the_drive(
    graph: FakeGraph, tmp_path_factory: pytest.TempPathFactory, page_size: int, public: bool
) -> None:
    @settings(
        max_examples=25,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(steps=st.lists(step, min_size=1, max_size=7))
    def run(steps: list[tuple[tuple[Any, ...], tuple[str, int]]]) -> None:
        graph.faults.clear()
        graph.page_size = page_size
        harness = Harness(graph, Path(tmp_path_factory.mktemp("prop")))
        harness.public = public
        drive = harness.add_drive("hr")
        folders = (
            drive.add_folder("HR", grants=[group("HR")]),
            drive.add_folder("Open", grants=[]),
        )
        state = _Drive(drive, folders)
        # A drive synced once already, a file in each folder, so changes meet stored state.
        for n, parent in enumerate(("root", *folders)):
            drive.add_file(NAMES[n], TEXTS[n], parent=parent, grants=list(GRANTS[n]))
        sync(harness, state, "clean", 0, public=public)
        for op, (fault, at) in steps:
            apply(state, op)
            if fault != "none":
                sync(harness, state, fault, at, public=public)
        sync(harness, state, "clean", 0, public=public)

    run()
