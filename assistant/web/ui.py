"""The browser chat UI's public face: the names the app, the CLI and the tests import.

The chat is split by concept, each module owning its part of gradio: `page` (the
page, `build_demo` and `launch`), `turn` (one question and its streamed answer),
`messages` (the answer's messages, Sources and the stopped state),
`conversations_ui` (conversations kept in the browser), `panels` (filters,
feedback, export, recent changes) and `identity` (who sent a request).
"""

from __future__ import annotations

from assistant.web.conversations_ui import STORAGE_KEY
from assistant.web.identity import user_of
from assistant.web.messages import mark_stopped
from assistant.web.page import EXAMPLES, TITLE, build_demo, launch, theme
from assistant.web.turn import make_responder

__all__ = [
    "EXAMPLES",
    "STORAGE_KEY",
    "TITLE",
    "build_demo",
    "launch",
    "make_responder",
    "mark_stopped",
    "theme",
    "user_of",
]
