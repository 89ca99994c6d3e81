"""The web server's own routes and guards beside Gradio's (fastapi and starlette live here).

`app_kwargs` gives Gradio's FastAPI app the read-only document viewer route
(``/doc/...``) and `LoginGuard`, which closes the job routes Gradio leaves open
to anonymous callers when a login is configured.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.routing import APIRoute
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send

from assistant.web.viewer import SECURITY_HEADERS, DocumentViewer

__all__ = ["LoginGuard", "app_kwargs"]


def app_kwargs(viewer: DocumentViewer) -> dict[str, Any]:
    """Return the FastAPI constructor arguments Gradio's ``launch`` passes on."""
    return {"routes": [_doc_route(viewer)], "middleware": [Middleware(LoginGuard)]}


def _authorised(request: Request) -> bool:
    # Mirrors Gradio's own check for its routes: the login cookie must name a live token.
    app = request.app
    if not getattr(app, "auth", None):
        return True
    cookie_id = getattr(app, "cookie_id", "")
    token = request.cookies.get(f"access-token-{cookie_id}") or request.cookies.get(
        f"access-token-unsecure-{cookie_id}"
    )
    return token is not None and token in getattr(app, "tokens", {})


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
        if (
            scope["type"] == "http"
            and str(scope["path"]).rstrip("/").endswith(self._GUARDED)
            and not _authorised(Request(scope))
        ):
            response = JSONResponse({"detail": "Not authenticated"}, status_code=401)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _doc_route(viewer: DocumentViewer) -> APIRoute:
    def show_document(path: str, request: Request) -> HTMLResponse:
        if not _authorised(request):
            body = '<!doctype html><p>Please <a href="/">log in</a> first.</p>'
            return HTMLResponse(body, status_code=401, headers=SECURITY_HEADERS)
        page = viewer.page(path, passage=request.query_params.get("passage", ""))
        return HTMLResponse(page.html, status_code=page.status, headers=SECURITY_HEADERS)

    return APIRoute(
        "/doc/{path:path}",
        show_document,
        methods=["GET"],
        response_class=HTMLResponse,
        include_in_schema=False,
    )
