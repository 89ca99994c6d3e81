"""With a login configured, every route refuses anonymous requests unless listed as public.

Routes are enumerated from the running app (Gradio's nested routers included),
so a route added by a future Gradio or by us is checked automatically: it must
refuse anonymous requests or be added to ``PUBLIC`` with a reason.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from gradio_client import Client

from assistant.config import Settings, UISettings
from assistant.session import Desk
from assistant.web.format import unlinked_markers
from assistant.web.ui import build_demo
from tests.conftest import free_port
from tests.support.served_ui import demo_launched
from tests.support.ui_fakes import FakeService

USER = ("ann", "pw-123")

# Reachable without a login, on purpose. Each must serve no policy text, no app
# config and no way to run the chat.
PUBLIC = {
    "/": "serves the login page (checked below: no app config) until logged in",
    "/login": "the login form posts here",
    "/login/": "the login form posts here",
    "/logout": "logging out needs no login",
    "/favicon.ico": "static icon",
    "/theme.css": "static stylesheet (theme colours, no data)",
    "/gradio_api/theme.css": "static stylesheet (theme colours, no data)",
    "/robots.txt": "static",
    "/manifest.json": "PWA manifest: app title and icon only",
    "/pwa_icon": "PWA icon",
    "/pwa_icon/{size}": "PWA icon",
    "/svelte/{path:path}": "front-end bundle (static JavaScript)",
    "/static/{path:path}": "front-end static files",
    "/assets/{path:path}": "front-end static files",
    "/openapi.json": "FastAPI's schema: route names only (Gradio's own is login-protected)",
    "/gradio_api/user": "answers null to anonymous callers",
    "/gradio_api/user/": "answers null to anonymous callers",
    "/gradio_api/token": "answers a null token to anonymous callers",
    "/gradio_api/token/": "answers a null token to anonymous callers",
    "/gradio_api/app_id": "a random per-launch number the client checks",
    "/gradio_api/app_id/": "a random per-launch number the client checks",
    "/gradio_api/startup-events": "whether startup events ran: a boolean",
    "/gradio_api/runs": "the front-end page shell (checked below: no app config)",
    "/gradio_api/runs/": "the front-end page shell (checked below: no app config)",
    "/gradio_api/heartbeat/{session_hash}": "keep-alive stream for a session id; sends no data",
    "/gradio_api/custom_component/{id}/{environment}/{type}/{file_name}": (
        "front-end code of custom components (we have none)"
    ),
    "/gradio_api/stream/{session_hash}/{run}/{component_id}/playlist.m3u8": (
        "media streaming of output components (we have none); 422 for any id"
    ),
    "/gradio_api/stream/{session_hash}/{run}/{component_id}/{segment_id}.{ext}": (
        "media streaming of output components (we have none); 422 for any id"
    ),
    "/gradio_api/stream/{session_hash}/{run}/{component_id}/playlist-file": (
        "media streaming of output components (we have none); 422 for any id"
    ),
}
# Valid bodies, so a route cannot hide behind a 422 validation error.
BODIES: dict[str, dict[str, Any]] = {
    "/gradio_api/cancel": {"session_hash": "s", "fn_index": 0, "event_id": "e"},
    "/gradio_api/reset": {"event_id": "e"},
    "/gradio_api/reset/": {"event_id": "e"},
    "/gradio_api/queue/join": {"data": ["hi", [], [], [], 4], "fn_index": 0, "session_hash": "s"},
}
REFUSED = {401, 403}
# Gradio answers these with 404/422 whoever asks, before any work is done.
INERT = {
    "/gradio_api/stream/{event_id}": "closes a media stream; unknown ids are 404/422",
    "/gradio_api/stream/{event_id}/close": "closes a media stream; unknown ids are 404",
    "/gradio_api/vibe-edit": "vibe editing is off (Gradio's --vibe mode only)",
    "/gradio_api/vibe-edit/": "vibe editing is off (Gradio's --vibe mode only)",
    "/gradio_api/undo-vibe-edit": "vibe editing is off (Gradio's --vibe mode only)",
    "/gradio_api/undo-vibe-edit/": "vibe editing is off (Gradio's --vibe mode only)",
    "/gradio_api/vibe-code": "vibe editing is off (Gradio's --vibe mode only)",
    "/gradio_api/vibe-code/": "vibe editing is off (Gradio's --vibe mode only)",
}


@dataclass
class Served:
    url: str
    app: Any


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    settings = Settings(ui=UISettings(port=free_port(), auth=(USER,)))
    demo = build_demo(Desk(FakeService(), settings=settings))
    with demo_launched(demo, settings) as url:
        yield Served(url, demo.app)


def routes(app: Any) -> Iterator[tuple[str, str]]:
    """Yield ``(path, method)`` for every route, descending into included routers."""

    def walk(items: list[Any], prefix: str) -> Iterator[tuple[str, str]]:
        for route in items:
            if hasattr(route, "original_router"):
                yield from walk(route.original_router.routes, prefix + route.include_context.prefix)
                continue
            for method in sorted(getattr(route, "methods", None) or {"GET"}):
                if method != "HEAD":
                    yield prefix + route.path, method

    return walk(list(app.routes), "")


def anonymous(url: str, path: str, method: str, *, cookie: str = "") -> tuple[int, str]:
    concrete = re.sub(r"\{[^}]+\}", "x", path)
    body = None
    if method in ("POST", "PUT", "PATCH", "DELETE"):
        body = json.dumps(BODIES.get(path, {})).encode()
    headers = {"Content-Type": "application/json"}
    if cookie:
        headers["Cookie"] = cookie
    request = urllib.request.Request(url + concrete, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=3) as response:
            return response.status, response.read(200_000).decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except TimeoutError:
        return 0, ""  # a stream that stays open (the heartbeat)


def test_every_non_public_route_refuses_anonymous_requests(served: Served) -> None:
    found = list(routes(served.app))
    paths = {path for path, _ in found}
    for must in ("/doc/{path:path}", "/config", "/gradio_api/info", "/gradio_api/queue/join"):
        assert must in paths  # the enumeration reaches Gradio's nested API router
    open_routes = []
    for path, method in found:
        if path in PUBLIC or path in INERT:
            continue
        status, _ = anonymous(served.url, path, method)
        if status not in REFUSED:
            open_routes.append(f"{method} {path} -> {status}")
    assert open_routes == [], "protect these or list them in PUBLIC:\n" + "\n".join(open_routes)


def test_inert_routes_do_nothing_for_anyone(served: Served) -> None:
    for path, method in routes(served.app):
        if path in INERT:
            assert anonymous(served.url, path, method)[0] in {403, 404, 405, 422}, path


@pytest.mark.parametrize("page", ["/", "/gradio_api/runs"])
def test_public_pages_carry_no_app_config(served: Served, page: str) -> None:
    status, body = anonymous(served.url, page, "GET")
    assert status == 200
    assert '"api_name"' not in body
    assert "Answers questions about the policy documents" not in body


def test_listed_public_routes_exist(served: Served) -> None:
    paths = {path for path, _ in routes(served.app)}
    stale = sorted(set(PUBLIC) - paths)
    assert stale == [], "PUBLIC lists routes the app no longer has"


def test_logged_in_session_can_use_the_ui_the_api_and_the_viewer(served: Served) -> None:
    login = urllib.request.Request(
        served.url + "/login",
        data=f"username={USER[0]}&password={USER[1]}".encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        method="POST",
    )
    with urllib.request.urlopen(login) as response:
        cookie = "; ".join(c.split(";", 1)[0] for c in response.headers.get_all("Set-Cookie") or [])
    assert "access-token" in cookie

    for path in ("/config", "/gradio_api/info", "/doc/loan-policy.md"):
        status, _ = anonymous(served.url, path, "GET", cookie=cookie)
        assert status == 200, path
    for path in ("/gradio_api/cancel", "/gradio_api/reset"):  # the Stop button's calls
        status, _ = anonymous(served.url, path, "POST", cookie=cookie)
        assert status == 200, path
    status, page = anonymous(served.url, "/", "GET", cookie=cookie)
    assert '"api_name"' in page  # the app itself, not the login page
    client = Client(served.url, auth=USER, verbose=False)
    final = client.submit("Loans?", [], [], 4, api_name="/chat").result(timeout=30)
    assert unlinked_markers(final[0]["content"]) == "Emergency loans cost 12% a year [1]."


def test_wrong_password_gets_nothing(served: Served) -> None:
    with pytest.raises(ValueError, match=r"(?i)login|auth|credentials"):
        Client(served.url, auth=(USER[0], "wrong"), verbose=False)
    bogus = "access-token-x=forged; access-token-unsecure-x=forged"
    assert anonymous(served.url, "/doc/loan-policy.md", "GET", cookie=bogus)[0] == 401
    assert anonymous(served.url, "/gradio_api/info", "GET", cookie=bogus)[0] in REFUSED
