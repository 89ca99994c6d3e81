"""The panels around the chat: filters, feedback, export and recent policy changes."""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gradio as gr

from assistant.config import Settings
from assistant.errors import AssistantError
from assistant.users import Directory
from assistant.web.answer_view import filters_label
from assistant.web.changes import ChangeFeed, recent_changes_markdown, visible_changes
from assistant.web.feedback import NO_RECORD, ChatAudit, owner_of
from assistant.web.identity import user_of
from assistant.web.turn import Catalog, as_list

__all__ = [
    "FEEDBACK_OPTIONS",
    "FilterBoxes",
    "conversation_tools",
    "filter_boxes",
    "refresh_filters",
    "wire_filters",
]

logger = logging.getLogger(__name__)

FEEDBACK_OPTIONS = (
    "Like",
    "Dislike",
    "Wrong or missing source",
    "Out of date",
    "Incomplete",
    "Not what I asked",
)

FilterBoxes = tuple[gr.Dropdown, gr.Dropdown, gr.Slider]
FEEDBACK_POP_ID = "feedback-pop"
# Plain words for ``k`` (was "Sources (k)").
PASSAGES_LABEL = "How many passages to read for each answer"
EXPORT_FORMATS = (("md", "Markdown"), ("html", "HTML"))


def filter_boxes(top_k: int) -> FilterBoxes:
    """Return the documents, tags and ``k`` inputs, unrendered (the chat renders them).

    The choices are empty at build time and filled per user on page load: Gradio
    renders build-time choices into the API schema of every page, the anonymous
    login page too (finding D1), and they would be the same for every user. The
    responder checks values against the user's current catalog instead.
    """
    # Enter completes to the first document or tag that matches what was typed (the
    # page's script); custom values stay allowed only so a stale value fails softly.
    source_box = gr.Dropdown(
        choices=[],
        multiselect=True,
        allow_custom_value=True,
        label="Documents",
        info="Type part of a title, then Enter",
        elem_id="filter-documents",
        render=False,
    )
    tag_box = gr.Dropdown(
        choices=[],
        multiselect=True,
        allow_custom_value=True,
        label="Tags",
        elem_id="filter-tags",
        render=False,
    )
    k_slider = gr.Slider(1, 10, value=min(top_k, 10), step=1, label=PASSAGES_LABEL, render=False)
    return source_box, tag_box, k_slider


def _source_choices(sources: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(f"{title} ({source})", source) for source, title in sources]


def _accordion_of(block: gr.blocks.Block) -> gr.Accordion | None:
    parent = block.parent
    while parent is not None and not isinstance(parent, gr.Accordion):
        parent = parent.parent
    return parent


def wire_filters(chat: gr.ChatInterface, source_box: gr.Dropdown, tag_box: gr.Dropdown) -> None:
    """Name the active filters in the collapsed Filters header; Clear clears them too."""
    # ChatInterface builds its own Accordion from the one given; label that one.
    accordion = _accordion_of(source_box)

    def label(chosen: list[Any] | None, tagged: list[Any] | None) -> Any:
        return gr.Accordion(label=filters_label(as_list(chosen), as_list(tagged)))

    if accordion is not None:
        for box in (source_box, tag_box):
            box.change(
                label, [source_box, tag_box], [accordion], api_visibility="private", queue=False
            )
    chat.chatbot.clear(
        lambda: ([], []), None, [source_box, tag_box], api_visibility="private", queue=False
    )


def refresh_filters(
    catalog: Catalog, directory: Directory | None
) -> Callable[..., tuple[Any, Any]]:
    """Return the page-load handler that fills the filters with what the user may read."""

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


def conversation_tools(
    chatbot: gr.Chatbot,
    *,
    audit: ChatAudit | None,
    changes: ChangeFeed | None,
    catalog: Catalog,
    directory: Directory | None,
    base_url: str = "/",
) -> None:
    """Add the feedback panel, the export buttons and the recent changes panel.

    ``base_url`` is where exported "open section" links point (`export_base`).
    """
    if audit is not None:
        _feedback_panel(chatbot, audit, directory)
    _export_buttons(chatbot, base_url)
    if changes is not None:
        _changes_panel(changes, catalog, directory)


def _changes_panel(changes: ChangeFeed, catalog: Catalog, directory: Directory | None) -> None:
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
        shown = visible_changes(changes.recent(), readable=readable, user=user)
        return recent_changes_markdown(shown, days=changes.days, first=changes.first_ingest())

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
    # Shown beside the rated answer (the page's script places it there), not under the chat.
    with gr.Column(elem_id=FEEDBACK_POP_ID, visible=False) as pop:
        note = gr.Markdown("", visible=False)
        with gr.Group(visible=False) as why:
            reason = gr.Textbox(label="What was wrong? (optional)", max_lines=3)
            correction = gr.Textbox(label="The right answer is... (optional)", max_lines=6)
            send = gr.Button("Send feedback", size="sm")
        close = gr.Button("Close", size="sm", elem_id="feedback-close")

    def rate(
        history: list[dict[str, Any]], data: gr.LikeData, request: gr.Request
    ) -> tuple[Any, ...]:
        user = user_of(request, directory)
        owner = owner_of(user, request.session_hash)
        record_id, message = audit.rate(history, data.index, data.liked, user=user, owner=owner)
        down = bool(record_id) and data.liked is not True
        flagged = data.liked if isinstance(data.liked, str) else ""
        note = gr.update(value=message, visible=True)
        # A like needs no form: the filled thumb says it was taken. A rating that was not
        # stored says so beside the answer.
        shown = down or message == NO_RECORD
        return record_id, gr.update(visible=down), note, flagged, "", gr.update(visible=shown)

    def explain(record_id: str, why_text: str, right: str, request: gr.Request) -> tuple[Any, ...]:
        user = user_of(request, directory)
        owner = owner_of(user, request.session_hash)
        message = audit.explain(record_id, why_text, right, user=user, owner=owner)
        return gr.update(visible=False), gr.update(value=message, visible=True)

    chatbot.like(
        rate,
        inputs=[chatbot],
        outputs=[record, why, note, reason, correction, pop],
        api_visibility="private",
        queue=False,
    )
    close.click(
        lambda: gr.update(visible=False),
        None,
        [pop],
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


def _export_buttons(chatbot: gr.Chatbot, base_url: str) -> None:
    """One button per format; a click writes the file and the page's script downloads it."""
    with gr.Row(elem_id="export-row"):
        buttons = [
            gr.Button(f"Download conversation ({name})", size="sm", elem_id=f"export-{kind}")
            for kind, name in EXPORT_FORMATS
        ]
    for button, (kind, _) in zip(buttons, EXPORT_FORMATS, strict=True):
        # Kept in the page but out of sight: the script clicks its link once it appears.
        file = gr.File(
            label=f"Conversation ({kind})", elem_classes=["export-file"], interactive=False
        )

        def export(history: list[dict[str, Any]], kind: str = kind) -> str:
            return _export(history, base_url, kind)

        button.click(export, inputs=[chatbot], outputs=[file], api_visibility="private")


def export_base(settings: Settings) -> str:
    """Return the base of exported links: ``ASSISTANT_PUBLIC_URL``, else the UI's own address.

    Never the request's ``Host`` header: behind a proxy that does not forward it the
    links would be dead, and a client choosing it would choose where they point (D25).
    """
    if settings.api.public_url:
        return settings.api.public_url.rstrip("/") + "/"
    host = settings.ui.host if settings.ui.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{settings.ui.port}/"


def _export(history: list[dict[str, Any]], base: str, kind: str) -> str:
    from assistant.web.history import conversation_html, conversation_markdown

    title = f"Policy assistant conversation, {time.strftime('%Y-%m-%d %H:%M')}"
    folder = Path(tempfile.mkdtemp(prefix="conversation-"))
    write = conversation_markdown if kind == "md" else conversation_html
    path = folder / f"conversation.{kind}"
    path.write_text(write(history, base_url=base, title=title), "utf-8")
    return str(path)
