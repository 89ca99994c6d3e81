"""Who sent a Gradio request: its login, or the headers of a trusted proxy."""

from __future__ import annotations

import gradio as gr

from assistant.types import ANONYMOUS, User
from assistant.users import Directory

__all__ = ["user_of"]


def user_of(request: gr.Request | None, directory: Directory | None) -> User:
    """Return who sent a Gradio request: its login, or a trusted proxy's headers."""
    if request is None or directory is None:
        return ANONYMOUS
    client = request.client.host if request.client is not None else None
    return directory.resolve(
        login=request.username, client=client, headers=list(request.headers.items())
    )
