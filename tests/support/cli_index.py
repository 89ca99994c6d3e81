"""A small real index for the command-line tests: real loaders, chunker, Chroma and retriever.

Only the embedding model is the fast fake of `tests.conftest`, injected through the
CLI's factories, so a test runs ``python -m assistant`` in process end to end.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from assistant.cli.search import main
from assistant.config import Settings, StoreSettings
from assistant.index.ingest import ingest
from assistant.protocols import Embedder, Searcher
from assistant.retrieval.factory import open_retriever
from tests.conftest import FakeEmbedder

LOANS = """# Loan Policy

## Emergency Loans

Emergency loans carry interest at 12% per annum on a reducing balance.
They are approved within one working day of a complete application.

A member may hold only one emergency loan at a time.

## Development Loans

Development loans fund long term projects such as building a house.
A development loan can be up to KES 3,000,000 and is repaid over at most 48 months.
"""
LEAVE = """# Leave Policy

## Annual Leave

Staff receive 21 days of annual leave each calendar year.
Up to 5 unused days may be carried forward into the next year.

## Sick Leave

Staff who are sick must tell their manager before 10:00 on the first day of absence.
"""


def build_index(base: Path) -> Path:
    """Write the two policies under ``base``, ingest them and return the index folder."""
    docs, index = base / "docs", base / "index"
    docs.mkdir()
    (docs / "loans.md").write_text(LOANS, encoding="utf-8")
    (docs / "leave.md").write_text(LEAVE, encoding="utf-8")
    settings = Settings(store=StoreSettings(path=index))
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    return index


class CountingEmbedder(FakeEmbedder):
    """The fake embedder, counting its ``embed`` calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        return super().embed(texts)


@dataclass
class Ran:
    code: int
    out: str
    err: str
    searchers: list[Settings] = field(default_factory=list)
    embedder: CountingEmbedder = field(default_factory=CountingEmbedder)


def run_cli(argv: list[str], *, stdin: str = "", env: dict[str, str] | None = None) -> Ran:
    """Run ``python -m assistant ARGV`` in process over the real index, with the fake model."""
    out, err = io.StringIO(), io.StringIO()
    ran = Ran(0, "", "")

    def searcher(settings: Settings) -> Searcher:
        ran.searchers.append(settings)
        return open_retriever(settings, embedder=ran.embedder)

    def embedder(settings: Settings) -> Embedder:
        return ran.embedder

    ran.code = main(
        argv,
        environ=env or {},
        stdin=io.StringIO(stdin),
        stdout=out,
        stderr=err,
        searcher_factory=searcher,
        embedder_factory=embedder,
    )
    ran.out, ran.err = out.getvalue(), err.getvalue()
    return ran
