"""The chat page: its header, the chat with its filters, the panels, and serving it.

`build_demo` wires a `ChatService` into a Gradio chat (one turn is `turn`, the
kept conversations `conversations_ui`, the panels `panels`). `launch` serves the
demo together with the read-only document viewer at ``/doc/<source>#<anchor>``
(see `assistant.web.viewer`) and returns the local URL.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr

from assistant.config import Settings
from assistant.session import Desk
from assistant.types import User
from assistant.users import Directory, load_directory
from assistant.web.changes import ChangeFeed
from assistant.web.conversations_ui import ConversationControls, wire_conversations, wire_stop
from assistant.web.feedback import ChatAudit
from assistant.web.identity import user_of
from assistant.web.in_flight import InFlight
from assistant.web.layout import CSS, HEAD, JS, SHORTCUTS_HTML
from assistant.web.panels import (
    FEEDBACK_OPTIONS,
    conversation_tools,
    export_base,
    filter_boxes,
    refresh_filters,
    wire_filters,
)
from assistant.web.routes import app_kwargs, socket_peer_only
from assistant.web.suggestions import Suggest
from assistant.web.trace import ChunkNames
from assistant.web.turn import Catalog, make_responder
from assistant.web.viewer import DocumentViewer

__all__ = ["EXAMPLES", "TITLE", "build_demo", "launch", "theme"]

logger = logging.getLogger(__name__)

TITLE = "Policy assistant"
# No fixed examples: `assistant.web.examples` draws them from the loaded corpus.
EXAMPLES: tuple[str, ...] = ()
PREVIOUS_LABEL = "Previous conversations"
# The question box's accessible name (its label is not shown) and its hint.
INPUT_LABEL = "Your question"
INPUT_PLACEHOLDER = "Ask a question about the policies"


def theme() -> gr.themes.Base:
    """Return the UI theme: system fonts only, so the page fetches nothing external."""
    return gr.themes.Default(
        font=[gr.themes.Font("system-ui"), "sans-serif"],
        font_mono=[gr.themes.Font("ui-monospace"), "monospace"],
    )


def build_demo(
    desk: Desk,
    *,
    sources: Sequence[tuple[str, str]] = (),
    tags: Sequence[str] = (),
    examples: Sequence[str] = EXAMPLES,
    catalog: Catalog | None = None,
    status: Callable[[User], str] | None = None,
    names: ChunkNames | None = None,
    directory: Directory | None = None,
    audit: ChatAudit | None = None,
    changes: ChangeFeed | None = None,
    suggest: Suggest | None = None,
) -> gr.Blocks:
    """Build the chat UI around a desk.

    Args:
        desk: Answers questions (shared by all users; holds no per-user state); its
            settings give the UI concurrency and the default ``k``.
        sources: ``(source, title)`` pairs offered in the documents filter.
        tags: Tags offered in the tags filter.
        examples: Example questions shown on the empty chat.
        catalog: Returns the current ``(sources, tags)`` a user may read; called on
            every page load, so documents ingested after start-up appear in the filters
            (default: the desk's catalogue, else ``sources`` and ``tags``).
        status: Returns the header line (corpus and answer mode) as a user sees it;
            called on every load (the page config, everyone's, holds none).
        names: Returns "Title > Section" for a chunk id, for the trace.
        directory: Who may log in and which groups they are in (None: anonymous).
        audit: Records answers and the thumbs on them; None shows no feedback panel.
        changes: The change list, for the "Recent policy changes" panel and "updated on".
        suggest: Offers follow-up questions after an answer (None offers none).

    Returns:
        The Gradio Blocks; serve it with `launch`.
    """
    settings = desk.settings
    current: Catalog = catalog or desk.catalogue or (lambda user: (sources, tags))
    in_flight = InFlight()
    respond = make_responder(
        desk.with_catalogue(current),
        names=names,
        directory=directory,
        audit=audit,
        changes=changes,
        suggest=suggest,
        in_flight=in_flight,
    )
    boxes = filter_boxes(settings.retrieval.top_k)
    demo = gr.Blocks(title=TITLE, analytics_enabled=False, fill_height=True)
    with demo:
        header, status_line = _header()
        chat = _chat(respond, boxes, examples, concurrency=settings.ui.concurrency)
        wire_filters(chat, boxes[0], boxes[1])
        wire_conversations(demo, chat, header, (boxes[0], boxes[1]), directory, in_flight)
        wire_stop(chat)
        conversation_tools(
            chat.chatbot,
            audit=audit,
            changes=changes,
            catalog=current,
            directory=directory,
            base_url=export_base(settings),
        )
        private: Any = {"api_visibility": "private", "queue": False}
        demo.load(refresh_filters(current, directory), outputs=[boxes[0], boxes[1]], **private)
        if status is not None:
            demo.load(_status_of(status, directory), outputs=[status_line], **private)
    return demo


def _chat(
    respond: Callable[..., object],
    boxes: tuple[gr.Dropdown, gr.Dropdown, gr.Slider],
    examples: Sequence[str],
    *,
    concurrency: int,
) -> gr.ChatInterface:
    return gr.ChatInterface(
        respond,
        chatbot=gr.Chatbot(
            elem_id="chat",
            show_label=False,
            scale=1,
            height="100%",
            latex_delimiters=[],
            # The page's script shows each new answer from its start; Gradio's own
            # scrolling followed the stream to its end, out of sight of the start.
            autoscroll=False,
            buttons=["copy"],
            # Thumbs, and a flag menu of common faults (stored as a thumbs down
            # with that reason, which the reason box then shows).
            feedback_options=FEEDBACK_OPTIONS,
        ),
        textbox=gr.Textbox(
            elem_id="chat-input",
            label=INPUT_LABEL,
            placeholder=INPUT_PLACEHOLDER,
            show_label=False,
            autofocus=True,
            scale=7,
            submit_btn=True,
            stop_btn=True,
        ),
        additional_inputs=list(boxes),
        additional_inputs_accordion=gr.Accordion("Filters", open=False, render=False),
        examples=[[question] for question in examples] or None,
        concurrency_limit=concurrency,
        api_name="chat",
        fill_height=True,
        # Not save_history: Gradio's saved-conversations column beside the chat
        # pushed the input out of the reading column (measured at 1920 px).
    )


def _status_of(
    status: Callable[[User], str], directory: Directory | None
) -> Callable[[gr.Request], str]:
    def line(request: gr.Request) -> str:
        return status(user_of(request, directory))

    return line


def _header() -> tuple[ConversationControls, gr.Markdown]:
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
        gr.HTML(SHORTCUTS_HTML, elem_id="shortcuts", container=False, scale=0, min_width=40)
    line = gr.Markdown("", elem_id="chat-status")  # filled per user on load
    note = gr.Markdown("", elem_id="chat-kept", visible=False)
    return ConversationControls(new_chat=new_chat, previous=previous, note=note), line


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
    with socket_peer_only():  # proxy trust is decided by the socket peer (finding D1)
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
            head=HEAD,
            app_kwargs=app_kwargs(viewer, directory),
        )
    return str(local_url)
