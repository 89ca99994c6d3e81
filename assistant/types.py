"""The data that flows between the assistant's modules.

Every value here is a small frozen dataclass; modules exchange these and never
raw vendor objects or loose dicts. Offsets are 0-based; ``*_end`` is exclusive.
Character offsets and line numbers refer to ``Document.text``: the file itself
for Markdown and plain text, the extracted text for HTML, PDF and DOCX.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "SIGNED_IN",
    "Answer",
    "AuditRecord",
    "AuditSource",
    "Banner",
    "Block",
    "BlockKind",
    "Chunk",
    "Citation",
    "DocMeta",
    "Document",
    "DocumentChange",
    "EvalQuestion",
    "Feedback",
    "FollowUp",
    "GoldEntry",
    "Hit",
    "IndexChanges",
    "IndexSnapshot",
    "Problem",
    "Reasoning",
    "RowOrigin",
    "SearchFilters",
    "SearchResult",
    "Section",
    "StoredDocument",
    "TextBlock",
    "TextBlockKind",
    "TextLine",
    "TokenVectors",
    "TokenWindow",
    "Turn",
    "User",
    "chunk_id",
    "shorten_heading",
    "shown_heading_path",
]


@dataclass(frozen=True, slots=True)
class TokenVectors:
    """A text's word pieces and their L2-normalised contextual vectors (one row each).

    What token-level late interaction compares: each of the question's pieces
    meets its best match among a passage's pieces (max-sim).
    """

    pieces: tuple[str, ...]
    vectors: npt.NDArray[np.float32]


class Reasoning(str):
    """A delta of a chat model's reasoning (``<think>`` text or ``reasoning_content``).

    `ChatModel.stream` yields these among its answer deltas: a plain ``str`` to code
    that does not look, so the service can keep reasoning out of the answer (never
    shown as answer text, never cite-checked) and show it collapsed in the trace.
    """

    __slots__ = ()


class Banner(str):
    """A delta naming how an answer is made (the offline label), not part of its text.

    An answer producer yields at most one, first; the service keeps it out of the
    answer and hands it to the doors as data (`AnswerStream.banner`), so no door
    finds it by its words.
    """

    __slots__ = ()


BlockKind = Literal["paragraph", "list_item", "table", "code", "heading", "faq", "other"]

HEADING_SEPARATOR = " > "


# Caps on what every chunk repeats: a stray setext ``=`` line can turn a whole
# paragraph into a heading, and a path is prepended to (and embedded with) every
# chunk under it. Real titles and headings, question headings included, fit.
MAX_TITLE_CHARS = 120
MAX_HEADING_CHARS = 200


def shorten_heading(text: str, limit: int) -> str:
    """Return ``text`` cut to at most ``limit`` characters at a word end, ending in "…"."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def shown_heading_path(path: tuple[str, ...]) -> tuple[str, ...]:
    """Return a heading path as chunks show it, each entry capped.

    The first entry (the title, or the root heading) is cut to `MAX_TITLE_CHARS`
    characters, every other heading to `MAX_HEADING_CHARS`.
    """
    return tuple(
        shorten_heading(text, MAX_TITLE_CHARS if i == 0 else MAX_HEADING_CHARS)
        for i, text in enumerate(path)
    )


def compose_chunk_text(heading_path: tuple[str, ...], prefix: str, body: str) -> str:
    """Return the text we embed for a chunk: heading path, blank line, prefix, body."""
    return HEADING_SEPARATOR.join(heading_path) + "\n\n" + prefix + body


@dataclass(frozen=True, slots=True)
class TokenWindow:
    """What the embedding model reads of a chunk, handed to the chunker by the ingest.

    ``count`` returns a text's length in the model's own tokens (special tokens
    included); the model reads at most ``limit`` of them and drops the rest.
    """

    count: Callable[[str], int]
    limit: int


@dataclass(frozen=True, slots=True)
class DocMeta:
    """Document-level metadata, mostly from YAML front matter.

    Dates are ISO ``YYYY-MM-DD`` strings, empty when unknown. ``date_source``
    says where the effective date (or, without one, the updated date) came from:
    ``"front matter"``, ``"meta tag"`` (HTML), ``"document properties"`` (PDF
    info, DOCX core properties) or ``"text"`` (an "Effective from ..." line near
    the top); empty when the document states no date.
    """

    title: str
    effective_date: str = ""
    updated_date: str = ""
    version: str = ""
    owner: str = ""
    tags: tuple[str, ...] = ()
    url: str = ""
    supersedes: str = ""
    date_source: str = ""
    # Groups that may read the document; () means everyone. None only before the
    # ingest resolved it (front matter without an audience key); stored chunks always
    # carry a tuple (see assistant.documents.access).
    audience: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Block:
    """One structural unit of a section: a paragraph, list item, table, code block...

    ``char_start:char_end`` is the block's exact span in ``Document.text``.
    """

    kind: BlockKind
    char_start: int
    char_end: int
    page: int = 0


TextBlockKind = Literal["heading", "paragraph", "item", "quote", "table", "code", "html"]


@dataclass(frozen=True, slots=True)
class TextLine:
    """One source line of a block's text, reduced to plain words.

    Attributes:
        text: The line's words: link text for links, the address for autolinks,
            alt text for images, code-span content, emphasis and inline HTML dropped.
        strong: The plain text of the line's first bold span, else "".
        strong_at: Where that span starts in ``text`` (-1 without one).
        indent: Spaces before the line's first character in the source.
    """

    text: str
    strong: str = ""
    strong_at: int = -1
    indent: int = 0


@dataclass(frozen=True, slots=True)
class TextBlock:
    """One block of a Markdown text as plain words (what answer units are cut from).

    Attributes:
        kind: A heading, a paragraph, a list item's first paragraph, a paragraph
            in a block quote, a table, a code block or an HTML block.
        text: The block's plain words, soft line breaks as spaces and hard
            breaks as newlines; for code and HTML blocks their raw content.
        level: A heading's level (1-6), else 0.
        depth: How many lists the block sits in (1 for a top-level item).
        lines: The block's source lines as plain words (code: its lines).
        header: A table's header cells.
        rows: A table's body rows, cells as plain words.
        span: The block's source lines, ``start:end``.
    """

    kind: TextBlockKind
    text: str
    level: int = 0
    depth: int = 0
    lines: tuple[TextLine, ...] = ()
    header: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    span: tuple[int, int] = (0, 0)


@dataclass(frozen=True, slots=True)
class Section:
    """A heading and the blocks up to the next heading of the same or higher level.

    ``heading_path`` starts with the document title's heading (or the title) and
    ends with this section's own heading. ``char_start:char_end`` spans the
    heading line and the body; ``blocks`` excludes the heading itself.
    """

    heading_path: tuple[str, ...]
    level: int
    anchor: str
    char_start: int
    char_end: int
    blocks: tuple[Block, ...]
    page: int = 0

    @property
    def breadcrumb(self) -> str:
        """Return the heading path joined with " > "."""
        return HEADING_SEPARATOR.join(self.heading_path)


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed input file.

    Attributes:
        source: POSIX path relative to the ingested root (the document's identity).
        root: The ingested root directory, as an absolute path.
        kind: ``markdown``, ``text``, ``html``, ``pdf`` or ``docx``.
        text: The text that all offsets refer to.
        sha256: Hash of the file's raw bytes.
        meta: Title, dates, tags and the like.
        sections: Sections in document order; together they cover ``text``.
        page_starts: For PDFs, the char offset where each page begins (page 1 first).
    """

    source: str
    root: str
    kind: str
    text: str
    sha256: str
    meta: DocMeta
    sections: tuple[Section, ...]
    page_starts: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Problem:
    """A file that could not be ingested, and why."""

    source: str
    reason: str


def chunk_id(source: str, ordinal: int) -> str:
    """Return the stable ID of the ``ordinal``-th chunk of ``source``."""
    return f"{source}#{ordinal}"


@dataclass(frozen=True, slots=True)
class Chunk:
    """The unit we embed and retrieve.

    ``body == document.text[char_start:char_end]`` always holds. ``prefix`` holds
    repeated context that is not at that span (a table's header row for the
    second and later pieces of a split table). ``text`` is what is embedded and
    shown: ``compose_chunk_text(heading_path, prefix, body)``.

    ``section_start:section_end`` spans the enclosing section (small to big).
    ``oversize`` is set when the embedding model would truncate ``text``.
    """

    chunk_id: str
    source: str
    ordinal: int
    heading_path: tuple[str, ...]
    anchor: str
    text: str
    body: str
    prefix: str
    char_start: int
    char_end: int
    start_line: int
    end_line: int
    section_start: int
    section_end: int
    page: int
    token_count: int
    kind: BlockKind = "paragraph"
    oversize: bool = False

    @property
    def breadcrumb(self) -> str:
        """Return the heading path joined with " > "."""
        return HEADING_SEPARATOR.join(self.heading_path)


@dataclass(frozen=True, slots=True)
class Hit:
    """A chunk found by search, with where it came from and how well it matched.

    ``score`` is in [0, 1] and follows the ranking (higher is better; only a
    superseded version, always ranked below its replacement, can show a higher
    score than a hit above it; see `assistant.retrieval.fusion`); ``dense_score``
    is the cosine similarity and ``lexical_score`` the BM25 score (0 when that
    retriever did not return the chunk). ``section_text`` is the enclosing
    section expanded under the context budget (small to big).
    """

    chunk: Chunk
    rank: int
    score: float
    title: str
    effective_date: str = ""
    dense_score: float = 0.0
    lexical_score: float = 0.0
    section_text: str = ""
    superseded: bool = False
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Restrictions applied to a search; empty fields mean "no restriction"."""

    sources: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    date_from: str = ""
    date_to: str = ""


@dataclass(frozen=True, slots=True)
class SearchResult:
    """What retrieval returns for one question.

    When ``no_good_match`` is true, ``hits`` holds the closest sections anyway so
    a caller can show them, but they must not be presented as an answer, and
    ``no_match_reason`` says why in plain words ("none of the closest sections
    mentions “dog” and ..."). ``unknown_words`` are the question's words that no
    indexed chunk contains, as typed ("cryptocurrency", or a misspelling).
    ``trace`` lines explain the candidates, scores and what was dropped.
    """

    query: str
    hits: tuple[Hit, ...]
    no_good_match: bool
    trace: tuple[str, ...] = field(default=())
    no_match_reason: str = ""
    unknown_words: tuple[str, ...] = ()


ADMIN_GROUP = "admin"


ANONYMOUS_NAME = "anonymous"
# The audience of a document every signed-in user may read (SharePoint's "people in
# the organisation"); the anonymous user may not.
SIGNED_IN = "signed-in"


@dataclass(frozen=True, slots=True)
class User:
    """Who is asking: a name and the groups whose documents they may read.

    Every search, answer, viewer and API request runs as one. ``ANONYMOUS`` (no
    login configured) reads the documents that have no audience; a member of
    ``ADMIN_GROUP`` reads everything.
    """

    name: str = ANONYMOUS_NAME
    groups: frozenset[str] = frozenset()

    @property
    def is_admin(self) -> bool:
        """Return whether this user reads every document, whatever its audience."""
        return ADMIN_GROUP in self.groups

    def may_read(self, audience: tuple[str, ...] | None) -> bool:
        """Return whether a document with ``audience`` (() or None: everyone) is readable.

        Besides groups, an audience may name a user by sign-in name (it holds an
        ``@``, so no group is mistaken for one) and `SIGNED_IN`, every user but
        the anonymous one (a SharePoint item shared with the whole organisation).
        """
        if not audience or self.is_admin or not self.groups.isdisjoint(audience):
            return True
        if SIGNED_IN in audience and self.name != ANONYMOUS_NAME:
            return True
        return "@" in self.name and self.name.lower() in audience


ANONYMOUS = User()


# How much of a conversation is kept as context: the newest turns, each cut to a length.
MAX_TURNS = 12
# The most sources a question may ask for, whichever door it came through.
MAX_K = 10
MAX_TURN_CHARS = 4000


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a conversation."""

    role: Literal["user", "assistant"]
    text: str


@dataclass(frozen=True, slots=True)
class Citation:
    """A ``[n]`` marker in an answer, resolved to the source it points at."""

    number: int
    hit: Hit


@dataclass(frozen=True, slots=True)
class Answer:
    """A finished answer with its sources and checked citations."""

    question: str
    text: str
    sources: tuple[Hit, ...]
    citations: tuple[Citation, ...]
    invalid_citation_numbers: tuple[int, ...] = ()
    unsupported_sentences: tuple[str, ...] = ()
    offline: bool = False
    # The model said the sources do not answer the question.
    not_covered: bool = False


@dataclass(frozen=True, slots=True)
class GoldEntry:
    """Where an evaluation question's answer lives: a file and a passage it must contain."""

    file: str
    heading_path: str
    must_contain: str

    def found_in(self, hit: Hit) -> bool:
        """Return whether ``hit`` comes from ``file`` and its chunk text holds the phrase.

        Case and runs of whitespace are ignored; the chunk text (heading path and
        body), not the expanded section, must hold it, since that is what is cited.
        """
        return hit.chunk.source == self.file and _folded(self.must_contain) in _folded(
            hit.chunk.text
        )


@dataclass(frozen=True, slots=True)
class FollowUp:
    """A two-turn way to ask an evaluation question: ``after`` first, then ``question``.

    ``question`` ("and for part-time staff?") stands for the evaluation question it
    belongs to once ``after`` has been asked; the oracle evaluation asks both turns.
    """

    after: str
    question: str


@dataclass(frozen=True, slots=True)
class EvalQuestion:
    """One evaluation question; no gold entries means it cannot be answered.

    ``answer`` is the optional one-sentence reference answer whose figures an
    answer-level evaluation looks for ("" when the file gives none); ``follow_up``
    an optional two-turn way of asking it (retrieval figures ignore it).
    """

    id: str
    question: str
    kind: str
    gold: tuple[GoldEntry, ...]
    answer: str = ""
    follow_up: FollowUp | None = None


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass(frozen=True, slots=True)
class StoredDocument:
    """What the index holds for one source: enough to decide whether to re-embed."""

    source: str
    root: str
    doc_keys: frozenset[str]
    chunk_ids: frozenset[str]
    chunk_count: int


@dataclass(frozen=True, slots=True, eq=False)
class IndexSnapshot:
    """Everything a searcher needs from the index, loaded into memory at once.

    Row ``i`` of ``vectors`` (float32, L2-normalised) belongs to ``chunks[i]``.
    ``docs`` maps each source to its metadata. ``generation`` changes whenever
    an ingest commits, so a long-running reader knows when to reload.
    ``roots`` maps each source to the directory it was ingested from.
    ``origin`` is set on a snapshot patched from another (`RowOrigin`), so what
    was derived from that one can be carried over row by row.
    """

    generation: str
    chunks: tuple[Chunk, ...]
    vectors: npt.NDArray[np.float32]
    docs: Mapping[str, DocMeta]
    roots: Mapping[str, str] = field(default_factory=dict)
    origin: RowOrigin | None = None


@dataclass(frozen=True, slots=True, eq=False)
class RowOrigin:
    """Where each row of a patched snapshot came from.

    ``rows[i]`` is the row of snapshot generation ``generation`` that row ``i``
    was kept from, or -1 for a row fetched by the patch.
    """

    generation: str
    rows: npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class AuditSource:
    """One retrieved section of an audited answer, with the document version it came from."""

    number: int
    chunk_id: str
    source: str
    title: str
    heading_path: str
    page: int
    effective_date: str
    version: str
    score: float
    cited: bool


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One question and its answer as the audit log keeps it.

    ``user`` is the user's name as given; the log itself replaces it with a
    keyed hash in ``anonymised`` mode. ``timings_ms`` are ``(stage, ms)`` pairs.
    """

    record_id: str
    time: str
    user: str
    question: str
    query: str
    filters: SearchFilters
    sources: tuple[AuditSource, ...]
    answer: str
    mode: str
    no_match: bool
    not_covered: bool
    unsupported: tuple[str, ...] = ()
    timings_ms: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class Feedback:
    """A thumbs up or down on one audited answer; a later one replaces it."""

    record_id: str
    time: str
    user: str
    rating: Literal["up", "down"]
    reason: str = ""
    correction: str = ""


ChangeKind = Literal["added", "edited", "removed"]


@dataclass(frozen=True, slots=True)
class DocumentChange:
    """What one ingest changed in one document, section by heading path."""

    time: str
    source: str
    title: str
    change: ChangeKind
    sections_added: tuple[str, ...] = ()
    sections_removed: tuple[str, ...] = ()
    sections_edited: tuple[str, ...] = ()
    old_effective_date: str = ""
    new_effective_date: str = ""
    old_version: str = ""
    new_version: str = ""
    # Who could read the document before and after the change (() is everyone).
    # Lines recorded before audiences were tracked read as administrators only, so
    # their section names are shown to nobody else (fail closed).
    old_audience: tuple[str, ...] = ("admin",)
    new_audience: tuple[str, ...] = ("admin",)

    @property
    def public(self) -> bool:
        """Return whether everyone could read the document before and after."""
        return not self.old_audience and not self.new_audience

    def readable_by(self, user: User) -> bool:
        """Return whether ``user`` could read the document before and after the change."""
        return user.may_read(self.old_audience) and user.may_read(self.new_audience)


@dataclass(frozen=True, slots=True)
class IndexChanges:
    """What one committed ingest changed, recorded with its generation.

    ``previous`` is the generation the ingest started from, or "" when that is
    unknown (a rebuild, or a run after one that died mid-write): a reader then
    cannot patch its snapshot and reloads in full. ``documents`` maps each
    written or removed source to ``added``, ``changed`` or ``removed``;
    ``upserted`` and ``deleted`` are the chunk IDs written and deleted.
    """

    generation: str
    previous: str
    documents: Mapping[str, str]
    upserted: tuple[str, ...]
    deleted: tuple[str, ...]

    @property
    def affected(self) -> frozenset[str]:
        """Return every chunk ID whose stored row this ingest wrote or deleted."""
        return frozenset(self.upserted) | frozenset(self.deleted)
