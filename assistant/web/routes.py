"""The web server's own routes and guards beside Gradio's (fastapi and starlette live here).

`app_kwargs` gives Gradio's FastAPI app the read-only document viewer route
(``/doc/...``), which shows a user only what they may read, and `LoginGuard`,
which closes the job routes Gradio leaves open to anonymous callers when a login
is configured and takes the API schema out of the pages it serves them.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.routing import APIRoute
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assistant.types import User
from assistant.users import Directory
from assistant.web.viewer import SECURITY_HEADERS, DocumentViewer

__all__ = ["LoginGuard", "app_kwargs", "request_user", "socket_peer_only"]

# uvicorn trusts X-Forwarded-For from the addresses in this variable (127.0.0.1 and
# ::1 by default) and then reports the header's address as the client. Gradio builds
# its uvicorn server with no way to say otherwise, so `socket_peer_only` empties it
# while that server is created (finding D1 of round three).
_FORWARDED_ALLOW_IPS = "FORWARDED_ALLOW_IPS"
_ENVIRONMENT = threading.Lock()


@contextmanager
def socket_peer_only() -> Iterator[None]:
    """Within this block, a uvicorn server created keeps the socket peer as the client.

    Trusted-proxy identity (`assistant.users.Directory.resolve`) must compare the
    socket peer, never an address a client wrote into ``X-Forwarded-For``.
    """
    with _ENVIRONMENT:
        saved = os.environ.get(_FORWARDED_ALLOW_IPS)
        os.environ[_FORWARDED_ALLOW_IPS] = ""
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop(_FORWARDED_ALLOW_IPS, None)
            else:
                os.environ[_FORWARDED_ALLOW_IPS] = saved


def app_kwargs(viewer: DocumentViewer, directory: Directory | None = None) -> dict[str, Any]:
    """Return the FastAPI constructor arguments Gradio's ``launch`` passes on."""
    return {
        "routes": [_doc_route(viewer, directory or Directory())],
        "middleware": [Middleware(LoginGuard)],
    }


def _login(request: Request) -> str | None:
    """Return the user name of the request's live login token, or None."""
    app = request.app
    cookie_id = getattr(app, "cookie_id", "")
    token = request.cookies.get(f"access-token-{cookie_id}") or request.cookies.get(
        f"access-token-unsecure-{cookie_id}"
    )
    tokens = getattr(app, "tokens", {}) or {}
    return str(tokens[token]) if token is not None and token in tokens else None


def _authorised(request: Request) -> bool:
    # Mirrors Gradio's own check for its routes: the login cookie must name a live token.
    if not getattr(request.app, "auth", None):
        return True
    return _login(request) is not None


def request_user(request: Request, directory: Directory) -> User:
    """Return who sent ``request``: its login, or a trusted proxy's identity headers."""
    client = request.client.host if request.client is not None else None
    return directory.resolve(
        login=_login(request), client=client, headers=list(request.headers.items())
    )


# Gradio renders the whole API schema (with every dropdown's choices) into each page,
# the anonymous login page too (finding D1). Anonymous pages get an empty one.
_API_INFO = re.compile(rb"window\.gradio_api_info = .*?;</script>", re.DOTALL)
_NO_API_INFO = (
    b'window.gradio_api_info = {"named_endpoints": {}, "unnamed_endpoints": {}};</script>'
)


class LoginGuard:
    """Refuses anonymous calls to the job routes Gradio leaves open when login is on.

    ``/gradio_api/cancel`` and ``/reset`` take a session hash and an event id and
    check no login (finding F1 in docs/hardening.md); everything else Gradio
    serves checks its own login cookie.
    """

    _GUARDED = ("/gradio_api/cancel", "/gradio_api/reset")

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer 401 for a guarded route without a valid login; pass everything else on."""
        if scope["type"] != "http" or _authorised(Request(scope)):
            await self.app(scope, receive, send)
            return
        if str(scope["path"]).rstrip("/").endswith(self._GUARDED):
            response = JSONResponse({"detail": "Not authenticated"}, status_code=401)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, _without_api_info(send))


def _without_api_info(send: Send) -> Send:
    """Wrap ``send`` so an HTML body goes out with the API schema emptied."""
    start: Message | None = None
    body = bytearray()

    async def wrapped(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            kind = dict(message.get("headers", [])).get(b"content-type", b"")
            if not kind.startswith(b"text/html"):
                start = None
                await send(message)
                return
            start = message
            return
        if message["type"] != "http.response.body" or start is None:
            await send(message)
            return
        body.extend(message.get("body", b""))
        if message.get("more_body", False):
            return
        cleaned = _API_INFO.sub(_NO_API_INFO, bytes(body))
        headers = [(k, v) for k, v in start.get("headers", []) if k != b"content-length"]
        headers.append((b"content-length", str(len(cleaned)).encode("ascii")))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": cleaned, "more_body": False})

    return wrapped


def _doc_route(viewer: DocumentViewer, directory: Directory) -> APIRoute:
    def show_document(path: str, request: Request) -> HTMLResponse:
        if not _authorised(request):
            body = '<!doctype html><p>Please <a href="/">log in</a> first.</p>'
            return HTMLResponse(body, status_code=401, headers=SECURITY_HEADERS)
        page = viewer.page(
            path,
            user=request_user(request, directory),
            passage=request.query_params.get("passage", ""),
        )
        return HTMLResponse(page.html, status_code=page.status, headers=SECURITY_HEADERS)

    return APIRoute(
        "/doc/{path:path}",
        show_document,
        methods=["GET"],
        response_class=HTMLResponse,
        include_in_schema=False,
    )
