"""Property: nothing of a document outside a user's audience reaches any output.

(Issue 27 adds the identity step: random proxy headers, from a trusted peer or
not, resolve to a user, and the header line, the changes panel and the webhook
are checked too.)

Random documents (each with its own marker words in title, heading, body, file
name and tag) get random audiences; random users ask random questions made of
any document's words. For every path a user can reach (search result and trace,
the chat answer, its Sources and Trace as shown, ``ask --json``, the filters'
lists and the viewer's catalog) no marker, file name or chunk id of a forbidden
document appears, except the words the user typed themselves, and those must be
reported as words no document uses. And a user's search over the whole index
ranks and scores exactly as an administrator's search over an index holding
only that user's documents: restricted text shapes no statistic.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.answering.service import build_assistant
from assistant.cli.ask import answer_to_json
from assistant.config import Settings
from assistant.index.changes import webhook_payload
from assistant.session.turn import start_turn
from assistant.session.visibility import LastSnapshot, catalog_of
from assistant.types import (
    ADMIN_GROUP,
    ANONYMOUS,
    DocMeta,
    DocumentChange,
    SearchFilters,
    SearchResult,
    User,
)
from assistant.users import load_directory
from assistant.web.changes import recent_changes_markdown, visible_changes
from assistant.web.format import sources_markdown, trace_markdown
from assistant.web.header import corpus_status
from tests.support.retrieval_helpers import FakeEmbedder, Section, build_document, make_retriever
from tests.support.retrieval_helpers import make_snapshot as snapshot_of

GROUPS = ("hr", "board", "finance")
COMMON = ("leave", "staff", "days", "policy", "approval", "salary")
ADMIN = User("root", frozenset({ADMIN_GROUP}))


def code(i: int) -> str:
    return "abcdefghij"[i // 10] + "klmnopqrst"[i % 10]


@dataclass(frozen=True)
class Doc:
    index: int
    audience: tuple[str, ...]
    common: tuple[str, ...]

    def marker(self, kind: str) -> str:
        # Same length for every marker: none is a substring of another.
        return f"xq{kind}{code(self.index)}"

    @property
    def source(self) -> str:
        return f"{self.marker('f')}.md"

    @property
    def markers(self) -> tuple[str, ...]:
        return (*tuple(self.marker(k) for k in "tbhg"), self.source)


docs_strategy = st.lists(
    st.tuples(
        st.sets(st.sampled_from(GROUPS)).map(lambda s: tuple(sorted(s))),
        st.lists(st.sampled_from(COMMON), min_size=1, max_size=3).map(tuple),
    ),
    min_size=1,
    max_size=6,
).map(lambda items: [Doc(i, a, c) for i, (a, c) in enumerate(items)])


def build(docs: list[Doc]) -> tuple[list, dict[str, DocMeta]]:  # type: ignore[type-arg]
    chunks, metas = [], {}
    for d in docs:
        body = f"The {d.marker('b')} rule: " + " ".join(d.common) + " need approval."
        heading = f"{d.marker('h').capitalize()} rules"
        title = f"{d.marker('t').capitalize()} Policy"
        chunks += build_document(d.source, title, [Section(heading, (body,))])
        metas[d.source] = DocMeta(title=title, tags=(d.marker("g"),), audience=d.audience)
    return chunks, metas


def outputs(docs: list[Doc], user: User, question: str) -> tuple[SearchResult, str]:
    chunks, metas = build(docs)
    embedder = FakeEmbedder()
    snapshot = snapshot_of(chunks, metas, embedder=embedder)
    retriever = make_retriever(snapshot, embedder)
    result = retriever.search(question, user=user)
    service = build_assistant(Settings(), searcher=retriever, embedder=embedder)
    outcome = start_turn(service, question, k=None, filters=SearchFilters(), user=user).run()
    answer, shown = outcome.answer, outcome.shown
    parts = [
        json.dumps(
            [
                [h.chunk.chunk_id, h.chunk.text, h.section_text, h.title, h.tags, h.chunk.source]
                for h in result.hits
            ]
        ),
        "\n".join(result.trace),
        result.no_match_reason,
        json.dumps(answer_to_json(outcome)),
        shown,
        sources_markdown(answer, include_uncited=True),
        trace_markdown(question=question, query=outcome.query, lines=outcome.trace, timings={}),
        json.dumps(catalog_of(snapshot, user)),
        json.dumps(list(LastSnapshot(lambda: snapshot).readable_roots(user))),
    ]
    return result, "\n".join(parts).lower()


users_strategy = st.builds(
    lambda groups, admin: User("u", frozenset(groups) | ({ADMIN_GROUP} if admin else set())),
    st.sets(st.sampled_from(GROUPS)),
    st.booleans(),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    docs=docs_strategy,
    user=users_strategy,
    picks=st.lists(st.tuples(st.integers(0, 5), st.sampled_from("tbhg")), max_size=3),
    words=st.lists(st.sampled_from(COMMON), max_size=3),
)
def test_no_output_reveals_a_forbidden_document(
    docs: list[Doc], user: User, picks: list[tuple[int, str]], words: list[str]
) -> None:
    asked = [docs[i % len(docs)].marker(kind) for i, kind in picks]
    question = " ".join(["what", *asked, *words]) + "?"
    result, text = outputs(docs, user, question)
    for doc in docs:
        if user.may_read(doc.audience):
            continue
        for marker in doc.markers:
            if marker in asked:
                # The user typed it: it is echoed, and must read as a word nobody uses.
                assert marker in [w.lower() for w in result.unknown_words], (marker, question)
            else:
                assert marker not in text, (marker, doc, user, question)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    docs=docs_strategy,
    groups=st.sets(st.sampled_from(GROUPS)),
    words=st.lists(st.sampled_from(COMMON), min_size=1, max_size=4),
)
def test_a_users_search_is_a_search_of_only_their_documents(
    docs: list[Doc], groups: set[str], words: list[str]
) -> None:
    user = User("u", frozenset(groups))
    question = " ".join(words)
    embedder = FakeEmbedder()
    chunks, metas = build(docs)
    full = make_retriever(snapshot_of(chunks, metas, embedder=embedder), embedder)
    readable = [d for d in docs if user.may_read(d.audience)]
    own_chunks, own_metas = build(readable)
    alone = make_retriever(snapshot_of(own_chunks, own_metas, embedder=embedder), embedder)

    mine, theirs = full.search(question, user=user), alone.search(question, user=ADMIN)

    def shape(r: SearchResult) -> object:
        hits = [(h.chunk.chunk_id, round(h.score, 5), round(h.lexical_score, 5)) for h in r.hits]
        return hits, r.no_good_match, r.no_match_reason, r.unknown_words

    assert shape(mine) == shape(theirs)
    untimed = [re.sub(r"timings: .*", "", line) for line in mine.trace]
    assert untimed == [re.sub(r"timings: .*", "", line) for line in theirs.trace]


# ---------------------------------------------------------------------------
# Issue 27: whoever the headers claim to be, the header line, the changes panel and
# the webhook carry nothing of a document the resolved user may not read.
# ---------------------------------------------------------------------------

HEADER_VALUES = st.sampled_from(
    [
        "ann",
        "admin",
        "ann, admin",
        "\u0430dmin",  # Cyrillic a
        "\uff41dmin",  # full-width
        "hr",
        "HR ,board",
        ",,",
        " ",
        "finance,\u0445r",
    ]
)
HEADER_NAMES = st.sampled_from(
    [
        "X-Forwarded-User",
        "x-forwarded-user",
        "X-FORWARDED-GROUPS",
        "X-Forwarded-Groups",
        "X-Forwarded-For",
        "X-Real-IP",
        "Forwarded",
    ]
)
headers_strategy = st.lists(st.tuples(HEADER_NAMES, HEADER_VALUES), max_size=6)


def _changes(docs: list[Doc], eras: list[tuple[int, int]]) -> list[DocumentChange]:
    audiences = [d.audience for d in docs]
    return [
        DocumentChange(
            time="2026-12-04T09:00:00+00:00",
            source=d.source,
            title=f"{d.marker('t').capitalize()} Policy",
            change="edited",
            sections_removed=(d.marker("h"),),
            old_audience=audiences[old % len(audiences)],
            new_audience=audiences[new % len(audiences)],
        )
        for d, (old, new) in zip(docs, eras, strict=False)
    ]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    docs=docs_strategy,
    headers=headers_strategy,
    trusted=st.booleans(),
    eras=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=6),
)
def test_headers_panels_and_webhook_reveal_no_forbidden_document(
    docs: list[Doc], headers: list[tuple[str, str]], trusted: bool, eras: list[tuple[int, int]]
) -> None:
    directory = load_directory(None, trusted_proxies=["10.9.9.9"])
    user = directory.resolve(
        login=None, client="10.9.9.9" if trusted else "127.0.0.1", headers=headers
    )
    if not trusted:
        assert user == ANONYMOUS
    # No look-alike ever becomes a group: only the plain names the headers can carry.
    assert user.groups <= {*GROUPS, ADMIN_GROUP, "ann"}
    chunks, metas = build(docs)
    snapshot = snapshot_of(chunks, metas, embedder=FakeEmbedder())
    readable = [d for d in docs if user.may_read(d.audience)]
    status = corpus_status(snapshot, Settings(), user)
    assert status.documents == len(readable)
    assert status.chunks == sum(c.source in {d.source for d in readable} for c in chunks)
    assert bool(status.ingested) <= (len(readable) == len(docs))
    changes = _changes(docs, eras)
    sources = {source for source, _ in catalog_of(snapshot, user)[0]}
    panel = recent_changes_markdown(
        visible_changes(changes, readable=sources, user=user), days=30
    ).lower()
    hook = json.dumps(webhook_payload(changes)).lower()
    for change, doc in zip(changes, docs, strict=False):
        if not (change.readable_by(user) and user.may_read(doc.audience)):
            assert doc.marker("h") not in panel
            assert doc.marker("t") not in panel
        if change.old_audience or change.new_audience:
            assert doc.marker("h") not in hook
            assert doc.source not in hook
