"""The browser chat UI (the only module that imports gradio).

`build_demo` wires a `ChatService` into a Gradio chat: the answer streams as
text, then the sources follow as a separate collapsible message titled
"Sources" and a collapsed "Trace" message. A filters panel passes documents,
tags and ``k`` to the service. `launch` serves the demo together with the
read-only document viewer at ``/doc/<source>#<anchor>`` (see
`assistant.web.viewer`) and returns the local URL.

Stopping an answer (the Stop button or a closed tab) makes Gradio close the
answer generator; its ``finally`` closes the `AnswerStream`, which closes the
upstream HTTP stream. Nothing per user lives on module globals.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr

from assistant.answering.service import shown_text
from assistant.config import Settings
from assistant.errors import AssistantError, IndexNotFoundError
from assistant.protocols import AnswerStream, ChatService
from assistant.types import ANONYMOUS, Answer, Hit, SearchFilters, Turn, User
from assistant.users import Directory, load_directory
from assistant.web.answer_view import (
    filter_note,
    filter_words,
    filters_label,
    no_match_body,
    sources_collapsed,
    sources_title,
)
from assistant.web.changes import ChangeFeed, recent_changes_markdown
from assistant.web.conversations import (
    clean_messages,
    cleared,
    opened,
    previous_choices,
    restored,
    saved,
    slot_of,
    started_new,
)
from assistant.web.feedback import RECORD_PREFIX, ChatAudit
from assistant.web.format import (
    escape_markdown,
    history_to_turns,
    sources_markdown,
    trace_markdown,
)
from assistant.web.layout import CSS, JS
from assistant.web.routes import app_kwargs
from assistant.web.trace import ChunkNames
from assistant.web.viewer import DocumentViewer
from assistant.words import valid_unicode

__all__ = [
    "EXAMPLES",
    "TITLE",
    "build_demo",
    "launch",
    "make_responder",
    "mark_stopped",
    "theme",
    "user_of",
]

logger = logging.getLogger(__name__)

TITLE = "Policy assistant"
# No fixed examples: `assistant.web.examples` draws them from the loaded corpus.
EXAMPLES: tuple[str, ...] = ()
STOPPED_NOTE = "*Stopped: the answer above is incomplete.*"
IN_PROGRESS = "Sources (answer in progress)"
NO_INDEX_MESSAGE = (
    "There is no search index yet. Run `python ingest.py` to index the policy documents; "
    "the chat uses the new index from the next question on, with no restart."
)
FAILED_MESSAGE = "Sorry, the assistant could not answer: {reason}"
UNKNOWN_FILTER_MESSAGE = (
    "These filter values are not in the index: {values}. Choose documents and tags from "
    "the Filters lists (reload the page to see newly indexed documents)."
)

# Conversations kept in the browser (`assistant.web.conversations`). Gradio encrypts
# local storage with a key it sends to the page anyway; a fixed one keeps the
# conversations readable after a server restart.
STORAGE_KEY = "policy-assistant-conversations"
STORAGE_SECRET = "policy-assistant-conversations-v1"
PREVIOUS_LABEL = "Previous conversations"
FEEDBACK_OPTIONS = (
    "Like",
    "Dislike",
    "Wrong or missing source",
    "Out of date",
    "Incomplete",
    "Not what I asked",
)
NEW_CHAT_NOTE = "Started a new conversation; the last one is under **Previous conversations**."

Responder = Callable[..., Iterator[list[gr.ChatMessage]]]
# The current documents and tags a user may read, for the filters.
FilterChoices = tuple[Sequence[tuple[str, str]], Sequence[str]]
Catalog = Callable[[User], FilterChoices]


def user_of(request: gr.Request | None, directory: Directory | None) -> User:
    """Return who sent a Gradio request: its login, or a trusted proxy's headers."""
    if request is None or directory is None:
        return ANONYMOUS
    client = request.client.host if request.client is not None else None
    return directory.resolve(
        login=request.username, client=client, headers=dict(request.headers.items())
    )


def theme() -> gr.themes.Base:
    """Return the UI theme: system fonts only, so the page fetches nothing external."""
    return gr.themes.Default(
        font=[gr.themes.Font("system-ui"), "sans-serif"],
        font_mono=[gr.themes.Font("ui-monospace"), "monospace"],
    )


UPDATE_INTERVAL_S = 0.05

# A question is a sentence or two; a longer one is pasted text or an attack, and
# would be searched, traced and echoed back in full.
MAX_QUESTION_CHARS = 4000
TOO_LONG_MESSAGE = (
    "Your question is {length:,} characters long; please shorten it to at most "
    f"{MAX_QUESTION_CHARS:,} characters."
)


def make_responder(
    service: ChatService,
    *,
    settings: Settings,
    catalog: Catalog | None = None,
    names: ChunkNames | None = None,
    directory: Directory | None = None,
    audit: ChatAudit | None = None,
    changes: ChangeFeed | None = None,
) -> Responder:
    """Return the chat generator Gradio calls with (message, history, sources, tags, k).

    Args:
        service: Answers questions.
        settings: Supplies the default ``k`` and the UI's own host for links.
        catalog: Returns the current ``(sources, tags)`` a user may read; filter values
            outside it are refused with a message. None accepts any value.
        names: Returns "Title > Section" for a chunk id, for the trace.
        directory: Resolves each request's user (None: everyone is anonymous).
        audit: Records each answer (and gives its message the record id); None records nothing.
        changes: Marks sources whose section changed lately ("updated on DATE").

    Returns:
        A generator function yielding the chat messages of one answer.
    """

    def respond(
        message: str,
        history: list[dict[str, Any]],
        sources: list[str] | None = None,
        tags: list[str] | None = None,
        k: float | None = None,
        request: gr.Request | None = None,
    ) -> Iterator[list[gr.ChatMessage]]:
        # API clients can send lone surrogates ("\ud800"); the model, the prompt and
        # Gradio's own JSON encoder all refuse them.
        question = valid_unicode(message.strip()) if isinstance(message, str) else ""
        if not question:
            yield [gr.ChatMessage(content="Please type a question.")]
            return
        if len(question) > MAX_QUESTION_CHARS:
            yield [gr.ChatMessage(content=TOO_LONG_MESSAGE.format(length=len(question)))]
            return
        user = user_of(request, directory)
        wanted_sources, wanted_tags = _as_list(sources), _as_list(tags)
        unknown = _unknown_filters(catalog, user, wanted_sources, wanted_tags)
        if unknown:
            yield [gr.ChatMessage(content=UNKNOWN_FILTER_MESSAGE.format(values=unknown))]
            return
        filters = SearchFilters(sources=tuple(wanted_sources), tags=tuple(wanted_tags))
        top_k = _clamp_k(k, default=settings.retrieval.top_k)
        turns = history_to_turns(history)
        titles = _titles(catalog, user)
        shown = _Shown(filters=filter_words(filters, titles), names=names)
        shown.no_match_note = filter_note(filters, titles)
        shown.audit, shown.changes, shown.user = audit, changes, user
        yield from _answer(service, question, turns, k=top_k, filters=filters, shown=shown)

    return respond


def _as_list(value: object) -> list[Any]:
    """Return a filter value as a list: API clients may send one string or nothing."""
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _unknown_filters(
    catalog: Catalog | None, user: User, sources: list[Any], tags: list[Any]
) -> str:
    """Return the filter values ``user`` cannot pick now, escaped and joined, or "".

    A document the user may not read is as unknown as one never indexed.
    """
    if catalog is None:
        return ""
    try:
        known_sources, known_tags = catalog(user)
    except AssistantError:
        return ""  # no index: the service says so
    names = {source for source, _ in known_sources}
    unknown = [v for v in sources if not isinstance(v, str) or v not in names]
    unknown += [v for v in tags if not isinstance(v, str) or v not in set(known_tags)]
    return ", ".join(escape_markdown(valid_unicode(str(value))) for value in unknown[:5])


@dataclass(slots=True)
class _Shown:
    """What the chat adds around an answer and who asked.

    The filters in words, chunk names for the trace, the audit log that records
    the answer, the change list that marks recently updated sources, the user.
    """

    filters: str = ""
    names: ChunkNames | None = None
    no_match_note: str = ""
    audit: ChatAudit | None = None
    changes: ChangeFeed | None = None
    user: User = field(default=ANONYMOUS)


def _titles(catalog: Catalog | None, user: User) -> dict[str, str]:
    if catalog is None:
        return {}
    try:
        sources, _ = catalog(user)
    except AssistantError:
        return {}
    return dict(sources)


def _clamp_k(k: float | None, *, default: int) -> int:
    if k is None:
        return default
    return min(max(int(k), 1), 10)


def _answer(
    service: ChatService,
    question: str,
    turns: Sequence[Turn],
    *,
    k: int,
    filters: SearchFilters,
    shown: _Shown,
) -> Iterator[list[gr.ChatMessage]]:
    started = time.perf_counter()
    try:
        stream = service.ask(question, turns, k=k, filters=filters, user=shown.user)
    except IndexNotFoundError:
        logger.warning("chat asked before an index exists")
        yield [gr.ChatMessage(content=NO_INDEX_MESSAGE)]
        return
    except AssistantError as exc:
        logger.warning("chat failed before streaming: %s", exc, exc_info=True)
        yield [gr.ChatMessage(content=FAILED_MESSAGE.format(reason=_short(exc)))]
        return
    try:
        yield from _stream(stream, question, started=started, shown=shown, filters=filters)
    finally:
        stream.close()


def _stream(
    stream: AnswerStream,
    question: str,
    *,
    started: float,
    shown: _Shown,
    filters: SearchFilters | None = None,
) -> Iterator[list[gr.ChatMessage]]:
    text, first, last_update = "", 0.0, 0.0
    # Shown while the answer streams, so a stopped answer's [n] still point somewhere.
    pending = _pending_sources(stream, question)
    try:
        for delta in stream:
            now = time.perf_counter()
            first = first or now - started
            text += delta
            # Each update makes Gradio diff and send the whole message list; with
            # many users streaming at once, coalescing deltas keeps first tokens fast.
            if now - last_update >= UPDATE_INTERVAL_S:
                last_update = now
                yield [gr.ChatMessage(content=text), *pending]
        answer = stream.answer()
    except AssistantError as exc:
        logger.warning("chat failed while streaming: %s", exc, exc_info=True)
        failed = f"{text}\n\n*{FAILED_MESSAGE.format(reason=_short(exc))}*"
        yield [gr.ChatMessage(content=failed), *_finished(pending)]
        return
    timings = {"first token": first, "total": time.perf_counter() - started}
    # The checked answer drops citation markers that point at no source.
    body = shown_text(answer, streamed=text, error=stream.error)
    no_match = stream.result.no_good_match or answer.not_covered
    updated = shown.changes.updated_on if shown.changes else None
    messages = (
        _no_match_messages(answer, body, shown)
        if no_match
        else _answer_messages(answer, body, updated=updated)
    )
    _record(messages[0], stream, answer, question, filters, shown, timings)
    trace = trace_markdown(
        question=question,
        query=stream.query,
        lines=stream.trace(),
        timings=timings,
        names=shown.names,
        filters=shown.filters,
        # Only the service's runs have it (as with ``mode``); other streams show none.
        reasoning=str(getattr(stream, "reasoning", "") or ""),
    )
    messages.append(gr.ChatMessage(content=trace, metadata={"title": "Trace", "status": "done"}))
    yield messages


def _record(
    message: gr.ChatMessage,
    stream: AnswerStream,
    answer: Answer,
    question: str,
    filters: SearchFilters | None,
    shown: _Shown,
    timings: dict[str, float],
) -> None:
    """Record the answer in the audit log; its id rides on the message for the thumbs."""
    if shown.audit is None:
        return
    record_id = shown.audit.answered(
        stream,
        answer,
        str(message.content),
        question=question,
        filters=filters or SearchFilters(),
        user=shown.user,
        timings_s=timings,
    )
    if record_id:
        message.metadata = {"id": RECORD_PREFIX + record_id}


def _pending_sources(stream: AnswerStream, question: str) -> list[gr.ChatMessage]:
    result = stream.result
    if not result.hits or result.no_good_match:
        return []
    provisional = Answer(question, "", result.hits, citations=())
    metadata: Any = {"title": IN_PROGRESS, "status": "done"}
    return [gr.ChatMessage(content=sources_markdown(provisional), metadata=metadata)]


def _finished(pending: list[gr.ChatMessage]) -> list[gr.ChatMessage]:
    """Return the provisional Sources retitled: the answer ended early, they still apply."""
    return [
        gr.ChatMessage(content=message.content, metadata={"title": "Sources", "status": "done"})
        for message in pending
    ]


def _answer_messages(
    answer: Answer, body: str, *, updated: Callable[[Hit], str] | None = None
) -> list[gr.ChatMessage]:
    messages = [gr.ChatMessage(content=body)]
    if not answer.sources:
        return messages
    listing = sources_markdown(answer, updated=updated)
    metadata: Any = {"title": "Sources"}
    if sources_collapsed(answer, body=body, sources_text=listing):
        # Short and cited: a one-line summary, the entries one click away.
        metadata = {"title": sources_title(answer), "status": "done"}
    messages.append(gr.ChatMessage(content=listing, metadata=metadata))
    return messages


def _no_match_messages(answer: Answer, body: str, shown: _Shown) -> list[gr.ChatMessage]:
    listed = no_match_body(body, answer.sources)
    text = listed or body
    if shown.no_match_note:
        text += "\n\n" + shown.no_match_note
    messages = [gr.ChatMessage(content=text)]
    if listed is None and answer.sources:
        metadata: Any = {"title": "Closest sections (no good match)"}
        messages.append(gr.ChatMessage(content=sources_markdown(answer), metadata=metadata))
    return messages


def mark_stopped(history: object) -> list[Any]:
    """Return the chat history with its last answer marked as stopped, sources kept.

    Stopping ends the answer generator before its final update, so the last answer
    text and the provisional Sources stay as they were; this says so and closes
    the Sources' "in progress" state.
    """
    if not isinstance(history, list):
        return []
    messages = [dict(m) if isinstance(m, dict) else m for m in history]
    answer_at = _last_answer(messages)
    if answer_at is None:
        return messages
    answer = messages[answer_at]
    content = answer.get("content")
    if isinstance(content, str) and STOPPED_NOTE not in content:
        answer["content"] = f"{content}\n\n{STOPPED_NOTE}"
    elif isinstance(content, list) and STOPPED_NOTE not in str(content):
        # Gradio 6 sends message content as typed parts.
        answer["content"] = [*content, {"type": "text", "text": f"\n\n{STOPPED_NOTE}"}]
    for message in messages[answer_at + 1 :]:
        metadata = message.get("metadata") if isinstance(message, dict) else None
        if isinstance(metadata, dict) and metadata.get("title") == IN_PROGRESS:
            message["metadata"] = {**metadata, "title": "Sources", "status": "done"}
    return messages


def _in_progress(history: object) -> bool:
    """Return whether ``history`` holds an answer still marked as in progress (a stopped one)."""
    return isinstance(history, list) and any(
        isinstance(m, dict)
        and isinstance(m.get("metadata"), dict)
        and m["metadata"].get("title") == IN_PROGRESS
        for m in history
    )


def _last_answer(messages: list[Any]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            return None
        metadata = message.get("metadata")
        if message.get("role") == "assistant" and not (
            isinstance(metadata, dict) and metadata.get("title")
        ):
            return index
    return None


def _short(exc: AssistantError) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 300 else text[:300] + "…"


def build_demo(
    service: ChatService,
    *,
    settings: Settings,
    sources: Sequence[tuple[str, str]] = (),
    tags: Sequence[str] = (),
    examples: Sequence[str] = EXAMPLES,
    catalog: Catalog | None = None,
    status: Callable[[], str] | None = None,
    names: ChunkNames | None = None,
    directory: Directory | None = None,
    audit: ChatAudit | None = None,
    changes: ChangeFeed | None = None,
) -> gr.Blocks:
    """Build the chat UI around a service.

    Args:
        service: Answers questions (shared by all users; holds no per-user state).
        settings: UI concurrency and the default ``k``.
        sources: ``(source, title)`` pairs offered in the documents filter.
        tags: Tags offered in the tags filter.
        examples: Example questions shown on the empty chat.
        catalog: Returns the current ``(sources, tags)`` a user may read; called on
            every page load, so documents ingested after start-up appear in the filters.
        status: Returns the header line (corpus and answer mode); called on every load.
        names: Returns "Title > Section" for a chunk id, for the trace.
        directory: Who may log in and which groups they are in (None: anonymous).
        audit: Records answers and the thumbs on them; None shows no feedback panel.
        changes: The change list, for the "Recent policy changes" panel and "updated on".

    Returns:
        The Gradio Blocks; serve it with `launch`.
    """
    # The choices are empty at build time and filled per user on page load: Gradio
    # renders build-time choices into the API schema of every page, the anonymous
    # login page too (finding D1), and they would be the same for every user. The
    # responder checks values against the user's current catalog instead.
    current: Catalog = catalog or (lambda user: (sources, tags))
    source_box = gr.Dropdown(
        choices=[],
        multiselect=True,
        allow_custom_value=True,
        label="Documents",
        render=False,
    )
    tag_box = gr.Dropdown(
        choices=[], multiselect=True, allow_custom_value=True, label="Tags", render=False
    )
    k_slider = gr.Slider(
        1, 10, value=min(settings.retrieval.top_k, 10), step=1, label="Sources (k)", render=False
    )
    demo = gr.Blocks(title=TITLE, analytics_enabled=False, fill_height=True)
    with demo:
        header = _header(status)
        chat = gr.ChatInterface(
            make_responder(
                service,
                settings=settings,
                catalog=current,
                names=names,
                directory=directory,
                audit=audit,
                changes=changes,
            ),
            chatbot=gr.Chatbot(
                elem_id="chat",
                show_label=False,
                scale=1,
                height="100%",
                latex_delimiters=[],
                buttons=["copy"],
                # Thumbs, and a flag menu of common faults (stored as a thumbs down
                # with that reason, which the reason box then shows).
                feedback_options=FEEDBACK_OPTIONS,
            ),
            additional_inputs=[source_box, tag_box, k_slider],
            additional_inputs_accordion=gr.Accordion("Filters", open=False, render=False),
            examples=[[question] for question in examples] or None,
            concurrency_limit=settings.ui.concurrency,
            api_name="chat",
            fill_height=True,
            # Not save_history: Gradio's saved-conversations column beside the chat
            # pushed the input out of the reading column (measured at 1920 px).
        )
        # ChatInterface builds its own Accordion from the one given; label that one.
        _wire_filters(chat, _accordion_of(source_box), source_box, tag_box)
        _wire_conversations(demo, chat, header, (source_box, tag_box), directory)
        _wire_stop(chat)
        _conversation_tools(
            chat.chatbot, audit=audit, changes=changes, catalog=current, directory=directory
        )
        demo.load(
            _refresh_filters(current, directory),
            outputs=[source_box, tag_box],
            api_visibility="private",
            queue=False,
        )
        if status is not None:
            demo.load(status, outputs=[header.status], api_visibility="private", queue=False)
    return demo


@dataclass(frozen=True, slots=True)
class _Header:
    new_chat: gr.Button
    previous: gr.Dropdown
    note: gr.Markdown
    status: gr.Markdown


def _header(status: Callable[[], str] | None) -> _Header:
    """Render the title (once), the kept conversations, "New chat" and the corpus / mode line."""
    with gr.Row(elem_id="chat-header", equal_height=True):
        gr.Markdown(f"# {TITLE}")
        # Filled per user on load (never at build time: the page config is everyone's).
        previous = gr.Dropdown(
            choices=[],
            value=None,
            label=PREVIOUS_LABEL,
            elem_id="previous-chats",
            visible=False,
            interactive=True,
            scale=0,
            min_width=260,
        )
        new_chat = gr.Button("New chat", elem_id="new-chat", size="sm", scale=0)
    line = gr.Markdown(status() if status else "", elem_id="chat-status")
    note = gr.Markdown("", elem_id="chat-kept", visible=False)
    return _Header(new_chat=new_chat, previous=previous, note=note, status=line)


def _source_choices(sources: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(f"{title} ({source})", source) for source, title in sources]


def _accordion_of(block: gr.blocks.Block) -> gr.Accordion | None:
    parent = block.parent
    while parent is not None and not isinstance(parent, gr.Accordion):
        parent = parent.parent
    return parent


def _wire_filters(
    chat: gr.ChatInterface,
    accordion: gr.Accordion | None,
    source_box: gr.Dropdown,
    tag_box: gr.Dropdown,
) -> None:
    """Name the active filters in the collapsed Filters header; Clear clears them too."""

    def label(chosen: list[Any] | None, tagged: list[Any] | None) -> Any:
        return gr.Accordion(label=filters_label(_as_list(chosen), _as_list(tagged)))

    if accordion is not None:
        for box in (source_box, tag_box):
            box.change(
                label, [source_box, tag_box], [accordion], api_visibility="private", queue=False
            )
    chat.chatbot.clear(
        lambda: ([], []), None, [source_box, tag_box], api_visibility="private", queue=False
    )


def _wire_conversations(
    demo: gr.Blocks,
    chat: gr.ChatInterface,
    header: _Header,
    filters: tuple[gr.Dropdown, gr.Dropdown],
    directory: Directory | None,
) -> None:
    """Keep conversations in the browser: restore on load, save after each change.

    ``page`` (server-side, per page) holds the slot of the user the page was loaded
    for and the id of the conversation it shows. A request whose user is not that
    one (another login in the same browser since) stores nothing.
    """
    store = gr.BrowserState(None, storage_key=STORAGE_KEY, secret=STORAGE_SECRET)
    page = gr.State({})
    chats = [chat.chatbot, chat.chatbot_state]

    def slot(request: gr.Request | None) -> str:
        return slot_of(user_of(request, directory))

    def mine(state: object, request: gr.Request | None) -> str | None:
        here = slot(request)
        return here if isinstance(state, dict) and state.get("slot") == here else None

    def listing(stored: object, here: str, current: object) -> Any:
        choices = previous_choices(stored, here, current)
        return gr.update(choices=choices, value=None, visible=bool(choices))

    def load(stored: object, request: gr.Request | None = None) -> tuple[Any, ...]:
        here = slot(request)
        current, messages = opened(stored, here)
        state = {"slot": here, "current": current}
        return messages, messages, state, listing(stored, here, current)

    def save(history: object, stored: object, state: Any, request: gr.Request) -> tuple[Any, ...]:
        here = mine(state, request)
        if here is None or not clean_messages(history):
            return gr.update(), gr.update(), state, gr.update()
        if _in_progress(history):  # saved as the Stop left it, whichever update came first
            history = mark_stopped(history)
        stored, current = saved(stored, here, state.get("current"), history, now=time.time())
        kept = listing(stored, here, current)
        return stored, kept, {**state, "current": current}, gr.update(visible=False)

    def new(stored: object, state: Any, request: gr.Request) -> tuple[Any, ...]:
        here = mine(state, request)
        emptied: tuple[list[Any], ...] = ([], [], [], [])
        if here is None:  # not this page's user: only empty the screen
            return *emptied, gr.update(), gr.update(visible=False), {}, gr.update(visible=False)
        note = gr.update(value=NEW_CHAT_NOTE, visible=bool(state.get("current")))
        stored = started_new(stored, here)
        return *emptied, stored, listing(stored, here, None), {**state, "current": None}, note

    def restore(wanted: object, stored: object, state: Any, request: gr.Request) -> Any:
        here = mine(state, request)
        found = restored(stored, here, wanted) if here else None
        if found is None:
            return gr.update(), gr.update(), gr.update(), gr.update(value=None), state, gr.update()
        stored, current, messages = found
        kept = listing(stored, here or "", current)
        return (
            messages,
            messages,
            stored,
            kept,
            {**state, "current": current},
            gr.update(visible=False),
        )

    def clear(stored: object, state: Any, request: gr.Request) -> tuple[Any, ...]:
        here = mine(state, request)
        if here is None:
            return gr.update(), gr.update(), state
        stored = cleared(stored, here, state.get("current"))
        return stored, listing(stored, here, None), {**state, "current": None}

    # No spinner over the header each time a conversation is saved.
    private: Any = {"api_visibility": "private", "queue": False, "show_progress": "hidden"}
    _queue_history_sync(demo, chat)
    demo.load(load, [store], [*chats, page, header.previous], **private)
    # The chat's own events (an answer, retry, undo, a stop) end by syncing this state.
    chat.chatbot_state.change(
        save,
        [chat.chatbot_state, store, page],
        [store, header.previous, page, header.note],
        **private,
    )
    header.new_chat.click(
        new,
        [store, page],
        [*chats, *filters, store, header.previous, page, header.note],
        **private,
    )
    header.previous.input(
        restore,
        [header.previous, store, page],
        [*chats, store, header.previous, page, header.note],
        **private,
    )
    chat.chatbot.clear(clear, [store, page], [store, header.previous, page], **private)


def _queue_history_sync(demo: gr.Blocks, chat: gr.ChatInterface) -> None:
    """Let the chat's own history updates fire ``chatbot_state.change``.

    ChatInterface copies the shown messages into ``chatbot_state`` at the end of
    every answer, retry, undo and edit, without the queue; Gradio 6 reports a
    State's change only from queued events. Queued, the copy still takes no time.
    """
    synced = 0
    for fn in demo.fns.values():
        if list(fn.inputs) == [chat.chatbot] and list(fn.outputs) == [
            chat.chatbot_state,
            chat.chatbot_value,
        ]:
            fn.queue, fn.concurrency_limit = True, None
            synced += 1
    if not synced:
        logger.warning("this Gradio has no chat history copy: conversations will not be kept")


def _wire_stop(chat: gr.ChatInterface) -> None:
    # Gradio's own Stop handler cancels the answer; this one marks what remains.
    # Queued, so the new state fires its change and the stopped answer is kept.
    chat.textbox.stop(
        lambda history: (mark_stopped(history),) * 2,
        [chat.chatbot],
        [chat.chatbot, chat.chatbot_state],
        api_visibility="private",
        concurrency_limit=None,
    )


def _refresh_filters(
    catalog: Catalog, directory: Directory | None
) -> Callable[..., tuple[Any, Any]]:
    def refresh(request: gr.Request | None = None) -> tuple[Any, Any]:
        try:
            sources, tags = catalog(user_of(request, directory))
        except AssistantError as exc:
            logger.warning("cannot list documents for the filters: %s", exc)
            return gr.update(), gr.update()
        return (
            gr.update(choices=_source_choices(sources)),
            gr.update(choices=list(tags)),
        )

    return refresh


def _preload_matplotlib() -> None:
    # Gradio wraps every event in MatplotlibBackendMananger, which imports
    # matplotlib if installed; concurrent first imports race and fail the event
    # with AttributeError '_original_backend'. Importing once up front avoids it.
    if importlib.util.find_spec("matplotlib") is not None:
        importlib.import_module("matplotlib")


def launch(
    demo: gr.Blocks,
    *,
    settings: Settings,
    viewer: DocumentViewer,
    share: bool = False,
    directory: Directory | None = None,
) -> str:
    """Start serving the chat and the document viewer in the background.

    Call ``demo.block_thread()`` afterwards to wait until the server stops,
    or ``demo.close()`` to stop it.

    Args:
        demo: From `build_demo`.
        settings: Host, port, auth pairs (empty means no login).
        viewer: Serves ``/doc/...``.
        share: Ask Gradio for a public share link (needs internet).
        directory: The users who may log in (None: ``settings.ui.auth`` pairs).

    Returns:
        The local URL, e.g. ``http://127.0.0.1:7860/``.
    """
    _preload_matplotlib()
    if directory is None:
        directory = load_directory(
            None, auth_pairs=settings.ui.auth, trusted_proxies=settings.ui.trusted_proxies
        )
    auth = directory.authenticate if directory.has_logins else None
    _, local_url, _ = demo.launch(
        server_name=settings.ui.host,
        server_port=settings.ui.port,
        auth=auth,
        share=share,
        prevent_thread_lock=True,
        quiet=True,
        show_error=False,
        footer_links=["api"],
        theme=theme(),
        css=CSS,
        js=JS,
        app_kwargs=app_kwargs(viewer, directory),
    )
    return str(local_url)


def _conversation_tools(
    chatbot: gr.Chatbot,
    *,
    audit: ChatAudit | None,
    changes: ChangeFeed | None,
    catalog: Catalog,
    directory: Directory | None,
) -> None:
    """Add the feedback panel, the export buttons and the recent changes panel."""
    if audit is not None:
        _feedback_panel(chatbot, audit, directory)
    with gr.Row():
        export = gr.Button("Export conversation (Markdown and HTML)", size="sm")
    files = gr.File(label="Conversation", file_count="multiple", visible=False, interactive=False)
    export.click(_export, inputs=[chatbot], outputs=[files], api_visibility="private")
    if changes is not None:
        # Empty until opened: the list names documents, and each user may see only
        # the changes of documents they may read (nothing goes into the page config).
        with gr.Accordion("Recent policy changes", open=False) as accordion:
            panel = gr.Markdown("")

        def readable_changes(request: gr.Request | None = None) -> str:
            user = user_of(request, directory)
            try:
                readable = {source for source, _ in catalog(user)[0]}
            except AssistantError:
                readable = set()
            shown = [
                c
                for c in changes.recent()
                if c.source in readable or (user.is_admin and c.change == "removed")
            ]
            return recent_changes_markdown(shown, days=changes.days)

        # Read again on opening: an ingest may have run since the page loaded.
        accordion.expand(
            readable_changes,
            outputs=[panel],
            api_visibility="private",
            queue=False,
            show_progress="hidden",
        )


def _feedback_panel(chatbot: gr.Chatbot, audit: ChatAudit, directory: Directory | None) -> None:
    record = gr.State("")
    with gr.Group(visible=False) as why:
        reason = gr.Textbox(label="What was wrong? (optional)", max_lines=3)
        correction = gr.Textbox(label="The right answer is... (optional)", max_lines=6)
        send = gr.Button("Send feedback", size="sm")
    note = gr.Markdown("", visible=False)

    def rate(
        history: list[dict[str, Any]], data: gr.LikeData, request: gr.Request
    ) -> tuple[Any, ...]:
        user = user_of(request, directory)
        record_id, message = audit.rate(history, data.index, data.liked, user=user)
        down = bool(record_id) and data.liked is not True
        flagged = data.liked if isinstance(data.liked, str) else ""
        note = gr.update(value=message, visible=True)
        return record_id, gr.update(visible=down), note, flagged, ""

    def explain(record_id: str, why_text: str, right: str, request: gr.Request) -> tuple[Any, ...]:
        user = user_of(request, directory)
        message = audit.explain(record_id, why_text, right, user=user)
        return gr.update(visible=False), gr.update(value=message, visible=True)

    chatbot.like(
        rate,
        inputs=[chatbot],
        outputs=[record, why, note, reason, correction],
        api_visibility="private",
        queue=False,
    )
    send.click(
        explain,
        inputs=[record, reason, correction],
        outputs=[why, note],
        api_visibility="private",
        queue=False,
    )


def _export(history: list[dict[str, Any]], request: gr.Request) -> Any:
    from assistant.web.history import conversation_html, conversation_markdown

    starlette_request = getattr(request, "request", None)
    base = str(starlette_request.base_url) if starlette_request is not None else "/"
    title = f"Policy assistant conversation, {time.strftime('%Y-%m-%d %H:%M')}"
    folder = Path(tempfile.mkdtemp(prefix="conversation-"))
    markdown = folder / "conversation.md"
    page = folder / "conversation.html"
    markdown.write_text(conversation_markdown(history, base_url=base, title=title), "utf-8")
    page.write_text(conversation_html(history, base_url=base, title=title), "utf-8")
    return gr.update(value=[str(markdown), str(page)], visible=True)
