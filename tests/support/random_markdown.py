"""Random Markdown documents for chunking properties.

Each document is a title, a few sections and their blocks (paragraphs, lists,
tables, code, FAQ entries), all made of words drawn from a test's own pieces:
URLs and non-Latin text for the embedder's window, links and abbreviations
for the filler's sentence cuts.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from assistant.types import Document
from tests.support.chunking_docs import doc_from_markdown


@dataclass(frozen=True, slots=True)
class Shape:
    """What a random document is made of, and how big its parts get."""

    pieces: Sequence[str]
    kinds: Sequence[str]
    title_words: int
    sections: int
    heading_words: int
    blocks: int
    # A paragraph of size n has n * paragraph_words words; a list item up to item_words.
    paragraph_words: int
    item_words: int

    def words(self, rng: random.Random, n: int) -> str:
        """Return ``n`` (at least one) pieces joined by spaces."""
        return " ".join(rng.choice(self.pieces) for _ in range(max(1, n)))

    def block(self, kind: str, rng: random.Random, size: int) -> str:
        """Return one block of ``kind`` whose length grows with ``size``."""
        words = self.words
        if kind == "paragraph":
            return words(rng, size * self.paragraph_words)
        if kind == "list":
            items = (f"- {words(rng, rng.randint(1, self.item_words))}" for _ in range(size or 1))
            return "\n".join(items)
        if kind == "table":
            cols = rng.randint(1, 4)
            rows = [
                "| " + " | ".join(words(rng, rng.randint(1, 3)) for _ in range(cols)) + " |"
                for _ in range(max(1, size) + 1)
            ]
            return "\n".join([rows[0], "|" + "---|" * cols, *rows[1:]])
        if kind == "code":
            lines = "\n".join(f"curl {words(rng, rng.randint(1, 6))}" for _ in range(size or 1))
            return f"```sh\n{lines}\n```"
        return f"**{words(rng, 4)}?**\n{words(rng, size * 2)}"  # an FAQ entry


def markdown_documents(shape: Shape) -> st.SearchStrategy[Document]:
    """Return a strategy for documents of ``shape``, parsed by the real Markdown loader."""

    @st.composite
    def documents(draw: st.DrawFn) -> Document:
        rng = random.Random(draw(st.integers(0, 2**32)))
        parts = [f"# {shape.words(rng, draw(st.integers(1, shape.title_words)))}"]
        kinds = st.sampled_from(list(shape.kinds))
        for _ in range(draw(st.integers(1, shape.sections))):
            heading = shape.words(rng, draw(st.integers(1, shape.heading_words)))
            parts.append("#" * draw(st.integers(2, 4)) + " " + heading)
            sizes = st.lists(st.tuples(kinds, st.integers(0, 40)), max_size=shape.blocks)
            parts.extend(shape.block(kind, rng, size) for kind, size in draw(sizes))
        return doc_from_markdown("\n\n".join(parts) + "\n")

    return documents()
