"""Stage 7, the browser: the Gradio chat, its wiring, the document viewer and routes.

Only this package imports gradio: `ui` names the public parts of the chat, which is split
by concept (`page`, `turn`, `messages`, `conversations_ui`, `panels`, `identity`); `app`
wires the real parts into it; `viewer` renders a source document; `routes` holds the
server's own routes and guards; `format` turns answers, sources and traces into safe
Markdown.
"""
