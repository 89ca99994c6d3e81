"""Turn one finished answer (chat, ``ask`` or API) into the `AuditRecord` the log keeps.

`make_record` builds the record; `record_answer` is what the chat, the ``ask``
command line and the API call: it queues the record and never raises, since an
audit bug must never cost anyone the answer.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping

from assistant.audit.log import AuditLog, utc_now
from assistant.protocols import AnswerStream
from assistant.types import (
    HEADING_SEPARATOR,
    Answer,
    AuditRecord,
    AuditSource,
    DocMeta,
    SearchFilters,
    User,
)

__all__ = ["DocLookup", "make_record", "new_record_id", "record_answer"]

logger = logging.getLogger(__name__)

DocLookup = Callable[[str], DocMeta | None]


def new_record_id() -> str:
    """Return a fresh record id (known before the record is written, so a chat can hold it)."""
    return uuid.uuid4().hex


def make_record(
    stream: AnswerStream,
    answer: Answer,
    shown: str,
    *,
    question: str,
    user: User,
    filters: SearchFilters,
    timings_ms: Mapping[str, float] | None = None,
    doc_meta: DocLookup | None = None,
    record_id: str = "",
) -> AuditRecord:
    """Return the record of an answer whose stream has ended.

    Args:
        stream: The finished run (its query, retrieval result, trace and mode).
        answer: Its checked answer.
        shown: The text the user saw.
        question: What the user typed.
        user: Who asked.
        filters: The filters the question was asked with.
        timings_ms: Extra timings measured by the caller, in milliseconds.
        doc_meta: Looks up a source's version (the hits carry only its effective date).
        record_id: The id to store under; a new one by default.
    """
    cited = {c.number for c in answer.citations}
    sources = []
    for number, hit in enumerate(answer.sources or stream.result.hits, start=1):
        meta = doc_meta(hit.chunk.source) if doc_meta else None
        sources.append(
            AuditSource(
                number=number,
                chunk_id=hit.chunk.chunk_id,
                source=hit.chunk.source,
                title=hit.title,
                heading_path=HEADING_SEPARATOR.join(hit.chunk.heading_path),
                page=hit.chunk.page,
                effective_date=hit.effective_date or (meta.effective_date if meta else ""),
                version=meta.version if meta else "",
                score=round(hit.score, 4),
                cited=number in cited,
            )
        )
    mode = stream.mode
    timings = dict(stream.timings_ms)
    timings.update({name: round(ms, 1) for name, ms in (timings_ms or {}).items()})
    return AuditRecord(
        record_id=record_id or new_record_id(),
        time=utc_now(),
        user=user.name,
        question=question,
        query=stream.query,
        filters=filters,
        sources=tuple(sources),
        answer=shown,
        mode=mode,
        no_match=stream.result.no_good_match or mode == "no good match",
        not_covered=answer.not_covered,
        unsupported=answer.unsupported_sentences,
        timings_ms=tuple(timings.items()),
    )


def record_answer(
    log: AuditLog,
    stream: AnswerStream,
    answer: Answer,
    shown: str,
    *,
    question: str,
    user: User,
    filters: SearchFilters,
    timings_ms: Mapping[str, float] | None = None,
    doc_meta: DocLookup | None = None,
) -> str:
    """Queue the record of a finished answer; return its id ("" if it could not be made).

    Never raises and never waits for the disk (`AuditLog.record` only queues).
    ``timings_ms`` name the caller (``ui total``, ``ask total``, ``api total``), so
    the log tells the chat's records from the command line's and the API's.
    """
    record_id = new_record_id()
    try:
        record = make_record(
            stream,
            answer,
            shown,
            question=question,
            user=user,
            filters=filters,
            timings_ms=timings_ms,
            doc_meta=_safe(doc_meta),
            record_id=record_id,
        )
        log.record(record)
    except Exception:  # an audit bug must never cost the user the answer
        logger.warning("cannot make the audit record of an answer", exc_info=True)
        return ""
    return record_id


def _safe(lookup: DocLookup | None) -> DocLookup | None:
    if lookup is None:
        return None

    def safe(source: str) -> DocMeta | None:
        try:
            return lookup(source)
        except Exception:  # no index right now: the record just lacks the version
            return None

    return safe
