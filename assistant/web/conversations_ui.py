"""Conversations kept in the browser, wired into the chat (the logic is `conversations`).

Restored on load, saved after each change, "New chat" keeps the last one under
"Previous conversations" in the header, picking one restores it, Clear forgets it.
A turn a reload cut short (`in_flight`) is added back to the conversation on load.
``page`` (server-side, per page) holds the slot of the user the page was loaded
for and the id of the conversation it shows. A request whose user is not that one
(another login in the same browser since) stores nothing.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import gradio as gr

from assistant.users import Directory
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
from assistant.web.identity import user_of
from assistant.web.in_flight import InFlight, browser_of
from assistant.web.messages import in_progress, mark_stopped

__all__ = [
    "NEW_CHAT_NOTE",
    "STORAGE_KEY",
    "STORAGE_SECRET",
    "ConversationControls",
    "wire_conversations",
    "wire_stop",
]

logger = logging.getLogger(__name__)

# Gradio encrypts local storage with a key it sends to the page anyway; a fixed one
# keeps the conversations readable after a server restart.
STORAGE_KEY = "policy-assistant-conversations"
STORAGE_SECRET = "policy-assistant-conversations-v1"
NEW_CHAT_NOTE = "Started a new conversation; the last one is under **Previous conversations**."


@dataclass(frozen=True, slots=True)
class ConversationControls:
    """The header's parts that show and pick the kept conversations."""

    new_chat: gr.Button
    previous: gr.Dropdown
    note: gr.Markdown


@dataclass(frozen=True, slots=True)
class _Keeper:
    """The event handlers; each works on the browser's store and the page's state."""

    directory: Directory | None
    in_flight: InFlight

    def slot(self, request: gr.Request | None) -> str:
        return slot_of(user_of(request, self.directory))

    def mine(self, state: object, request: gr.Request | None) -> str | None:
        here = self.slot(request)
        return here if isinstance(state, dict) and state.get("slot") == here else None

    @staticmethod
    def listing(stored: object, here: str, current: object) -> Any:
        choices = previous_choices(stored, here, current)
        return gr.update(choices=choices, value=None, visible=bool(choices))

    def load(self, stored: object, request: gr.Request | None = None) -> tuple[Any, ...]:
        here = self.slot(request)
        current, messages = opened(stored, here)
        turn = self.in_flight.take(browser_of(request, here))
        if turn and not _already_kept(messages, turn):
            messages = [*messages, *turn]
            stored, current = saved(stored, here, current, messages, now=time.time())
        state = {"slot": here, "current": current}
        return messages, messages, stored, state, self.listing(stored, here, current)

    def save(
        self, history: object, stored: object, state: Any, request: gr.Request
    ) -> tuple[Any, ...]:
        here = self.mine(state, request)
        if here is None or not clean_messages(history):
            return gr.update(), gr.update(), state, gr.update()
        if in_progress(history):  # saved as the Stop left it, whichever update came first
            history = mark_stopped(history)
        self.in_flight.forget(browser_of(request, here))
        stored, current = saved(stored, here, state.get("current"), history, now=time.time())
        kept = self.listing(stored, here, current)
        return stored, kept, {**state, "current": current}, gr.update(visible=False)

    def new(self, stored: object, state: Any, request: gr.Request) -> tuple[Any, ...]:
        here = self.mine(state, request)
        emptied: tuple[list[Any], ...] = ([], [], [], [])
        if here is None:  # not this page's user: only empty the screen
            return *emptied, gr.update(), gr.update(visible=False), {}, gr.update(visible=False)
        note = gr.update(value=NEW_CHAT_NOTE, visible=bool(state.get("current")))
        stored = started_new(stored, here)
        return *emptied, stored, self.listing(stored, here, None), {**state, "current": None}, note

    def restore(self, wanted: object, stored: object, state: Any, request: gr.Request) -> Any:
        here = self.mine(state, request)
        found = restored(stored, here, wanted) if here else None
        if found is None:
            return gr.update(), gr.update(), gr.update(), gr.update(value=None), state, gr.update()
        stored, current, messages = found
        kept = self.listing(stored, here or "", current)
        current_state = {**state, "current": current}
        return messages, messages, stored, kept, current_state, gr.update(visible=False)

    def clear(self, stored: object, state: Any, request: gr.Request) -> tuple[Any, ...]:
        here = self.mine(state, request)
        if here is None:
            return gr.update(), gr.update(), state
        stored = cleared(stored, here, state.get("current"))
        return stored, self.listing(stored, here, None), {**state, "current": None}


def wire_conversations(
    demo: gr.Blocks,
    chat: gr.ChatInterface,
    header: ConversationControls,
    filters: tuple[gr.Dropdown, gr.Dropdown],
    directory: Directory | None,
    in_flight: InFlight | None = None,
) -> None:
    """Keep conversations in the browser: restore on load, save after each change."""
    store = gr.BrowserState(None, storage_key=STORAGE_KEY, secret=STORAGE_SECRET)
    page = gr.State({})
    chats = [chat.chatbot, chat.chatbot_state]
    keeper = _Keeper(directory, in_flight or InFlight())
    # No spinner over the header each time a conversation is saved.
    private: Any = {"api_visibility": "private", "queue": False, "show_progress": "hidden"}
    _queue_history_sync(demo, chat)
    demo.load(keeper.load, [store], [*chats, store, page, header.previous], **private)
    # The chat's own events (an answer, retry, undo, a stop) end by syncing this state.
    chat.chatbot_state.change(
        keeper.save,
        [chat.chatbot_state, store, page],
        [store, header.previous, page, header.note],
        **private,
    )
    header.new_chat.click(
        keeper.new,
        [store, page],
        [*chats, *filters, store, header.previous, page, header.note],
        **private,
    )
    header.previous.input(
        keeper.restore,
        [header.previous, store, page],
        [*chats, store, header.previous, page, header.note],
        **private,
    )
    chat.chatbot.clear(keeper.clear, [store, page], [store, header.previous, page], **private)


def _already_kept(messages: list[Any], turn: list[dict[str, Any]]) -> bool:
    """Return whether the conversation already ends with the kept turn's question."""
    asked = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    return bool(asked) and asked[-1].get("content") == turn[0]["content"]


def _queue_history_sync(demo: gr.Blocks, chat: gr.ChatInterface) -> None:
    """Let the chat's own history updates fire ``chatbot_state.change``; keep a Stop's mark.

    ChatInterface copies the shown messages into ``chatbot_state`` at the end of
    every answer, retry, undo and edit, without the queue; Gradio 6 reports a
    State's change only from queued events. Queued, the copy still takes no time.
    The copy also goes back to the chat (through ``chatbot_value``), and after a
    Stop it may read the page before the Stop's mark reached it: on a loaded
    server the answer then showed "in progress" again, without its Stopped note.
    An answer still in progress when its event has ended was cut short, so the
    copy marks it stopped itself, whichever update comes first.
    """
    synced = 0
    for fn in demo.fns.values():
        if list(fn.inputs) == [chat.chatbot] and list(fn.outputs) == [
            chat.chatbot_state,
            chat.chatbot_value,
        ]:
            fn.queue, fn.concurrency_limit = True, None
            fn.fn = _synced_history
            synced += 1
    if not synced:
        logger.warning("this Gradio has no chat history copy: conversations will not be kept")


def _synced_history(history: object) -> tuple[object, object]:
    kept = mark_stopped(history) if in_progress(history) else history
    return kept, kept


def wire_stop(chat: gr.ChatInterface) -> None:
    """Mark a stopped answer as stopped (Gradio's own Stop handler cancels it)."""
    # Queued, so the new state fires its change and the stopped answer is kept.
    chat.textbox.stop(
        lambda history: (mark_stopped(history),) * 2,
        [chat.chatbot],
        [chat.chatbot, chat.chatbot_state],
        api_visibility="private",
        concurrency_limit=None,
    )
