"""Follow-up questions shown under an answer as Gradio's message options.

A chat message's ``options`` render as buttons under it; the chat asks an option's
value as the next question when it is clicked (`gr.ChatInterface` wires that), so a
suggestion needs no script of ours. `suggestions.follow_ups` chooses them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

import gradio as gr
from gradio.components.chatbot import OptionDict

from assistant.errors import AssistantError
from assistant.types import Answer, User
from assistant.web.suggestions import Suggest

__all__ = ["Suggest", "with_follow_ups"]

logger = logging.getLogger(__name__)


def with_follow_ups(
    messages: Sequence[gr.ChatMessage], answer: Answer, user: User, suggest: Suggest | None
) -> list[gr.ChatMessage]:
    """Return ``messages`` with the answer's follow-up questions under the last one."""
    if suggest is None or not messages:
        return list(messages)
    try:
        questions = suggest(answer, user)
    except AssistantError as exc:
        logger.warning("no follow-up questions: %s", exc)
        return list(messages)
    if not questions:
        return list(messages)
    options: list[OptionDict] = [{"value": q, "label": q} for q in questions]
    return [*messages[:-1], dataclasses.replace(messages[-1], options=options)]
