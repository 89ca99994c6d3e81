"""The one path of a question between the core stages and the doors (web, api, cli).

A door imports this package, never one of its modules. `open_desk` wires the parts once
per process (`stack`); `Desk.request` reads what a door received into a `Request` or a
`Problem` (`desk`, `filters`, `request`); `Desk.ask` answers it into one `Outcome`,
recorded once (`turn`); `visibility` decides what a user may see outside search;
`sources` turns an answer's sources into data each door renders its own way
(`passages` and `plain` serve it).
"""

from assistant.session.desk import MAX_K, Desk, Request, filters_for, open_desk
from assistant.session.filters import Catalogue
from assistant.session.passages import (
    cited_passages,
    marker_passages,
    renumbered,
    shown_numbers,
    source_passages,
)
from assistant.session.plain import (
    defuse_markers,
    escape_markdown,
    inert_text,
    plain_reply,
    plain_text,
    table_row_text,
    unescape_markdown,
)
from assistant.session.problem import Problem, ProblemKind, problem_of
from assistant.session.request import (
    MAX_QUESTION_CHARS,
    history_to_turns,
    message_text,
    unlinked_markers,
)
from assistant.session.sources import (
    SourceEntry,
    doc_link,
    section_path,
    shown_entries,
    source_entries,
)
from assistant.session.stack import (
    open_assistant,
    open_searcher,
    searching_as,
    shared_embedder,
    user_of,
)
from assistant.session.turn import (
    AnswerTurn,
    AuditLog,
    Delta,
    DocLookup,
    Event,
    Failed,
    Finished,
    Outcome,
    utc_now,
)
from assistant.session.visibility import (
    LastSnapshot,
    catalog_of,
    indexed_at,
    may_open_now,
    readable_docs,
)

__all__ = [
    "MAX_K",
    "MAX_QUESTION_CHARS",
    "AnswerTurn",
    "AuditLog",
    "Catalogue",
    "Delta",
    "Desk",
    "DocLookup",
    "Event",
    "Failed",
    "Finished",
    "LastSnapshot",
    "Outcome",
    "Problem",
    "ProblemKind",
    "Request",
    "SourceEntry",
    "catalog_of",
    "cited_passages",
    "defuse_markers",
    "doc_link",
    "escape_markdown",
    "filters_for",
    "history_to_turns",
    "indexed_at",
    "inert_text",
    "marker_passages",
    "may_open_now",
    "message_text",
    "open_assistant",
    "open_desk",
    "open_searcher",
    "plain_reply",
    "plain_text",
    "problem_of",
    "readable_docs",
    "renumbered",
    "searching_as",
    "section_path",
    "shared_embedder",
    "shown_entries",
    "shown_numbers",
    "source_entries",
    "source_passages",
    "table_row_text",
    "unescape_markdown",
    "unlinked_markers",
    "user_of",
    "utc_now",
]
