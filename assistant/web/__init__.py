"""Stage 7, the browser: the Gradio chat, its wiring, the document viewer and routes.

`ui` is the only module that imports gradio; `app` wires the real parts into it; `viewer`
renders a source document; `routes` holds the server's own routes and guards; `format`
turns answers, sources and traces into safe Markdown.
"""
