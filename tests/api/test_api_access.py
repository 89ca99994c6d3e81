"""Who an API call runs as (issue 27: D6, D21, D23), over a real uvicorn on 127.0.0.1.

The app is `build_api` over a scripted service that records the user of each
question; keys and users are real files, and requests are real HTTP.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import uvicorn

from assistant.api.keys import KeyStore, open_key_store
from assistant.api.server import build_api
from assistant.config import APISettings, Settings, UISettings
from assistant.errors import ConfigError
from assistant.session import Desk
from assistant.types import ANONYMOUS, SearchFilters, Turn, User
from assistant.users import add_user
from tests.conftest import free_port
from tests.support.ui_fakes import FakeService, FakeStream

QUESTION = "What is the emergency loan interest rate?"


@dataclass
class UserService(FakeService):
    """The scripted service, also noting who asked."""

    users: list[User] = field(default_factory=list)

    def ask(
        self,
        question: str,
        history: Sequence[Turn] = (),
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        user: User = ANONYMOUS,
    ) -> FakeStream:
        self.users.append(user)
        return super().ask(question, history, k=k, filters=filters, user=user)


@dataclass
class Api:
    url: str
    service: UserService
    settings: Settings


@contextlib.contextmanager
def _serve(settings: Settings, keys: KeyStore | None = None) -> Iterator[Api]:
    service = UserService()
    app = build_api(Desk(service, settings=settings), keys=keys)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=settings.api.port, log_level="warning", proxy_headers=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield Api(f"http://127.0.0.1:{settings.api.port}", service, settings)
    finally:
        server.should_exit = True
        thread.join(10)


def _settings(tmp_path: Path, *, users: Path | None = None, loopback: bool = False) -> Settings:
    return Settings(
        api=APISettings(
            port=free_port(), keys_file=str(tmp_path / "keys.json"), anonymous_loopback=loopback
        ),
        ui=UISettings(users_file=users),
    )


def _ask(api: Api, key: str = "", **headers: str) -> httpx.Response:
    sent = {"Content-Type": "application/json", **headers}
    if key:
        sent["Authorization"] = f"Bearer {key}"
    body = {"messages": [{"role": "user", "content": QUESTION}]}
    return httpx.post(api.url + "/v1/chat/completions", json=body, headers=sent, timeout=30)


def test_keys_add_lower_cases_splits_and_validates_groups(tmp_path: Path) -> None:
    """D21: ``--group HR`` and ``--group "board, hr"`` are stored as groups that can match."""
    store = KeyStore(tmp_path / "keys.json")
    _, record = store.add("x", ("HR", "board, hr", " Managers "))
    assert record.groups == ("board", "hr", "managers")
    for bad in (
        "h r",
        "hr!",
        "\u00dcn\u00efcode",
        "\uff41dmin",
    ):  # the last is a full-width look-alike
        with pytest.raises(ConfigError, match="not a valid group name"):
            store.add("x", (bad,))


def test_a_key_runs_with_its_users_current_groups_and_dies_with_the_user(tmp_path: Path) -> None:
    """D6: with ASSISTANT_USERS, a key follows the users file, demotion and deletion included."""
    users = tmp_path / "users.toml"
    add_user(users, "ann", "pw-ann-123", ["hr"])
    add_user(users, "bob", "pw-bob-123", [])
    settings = _settings(tmp_path, users=users)
    store = open_key_store(settings)
    ann_key, record = store.add("ann", ())
    assert record.groups == ()
    bob_key, _ = store.add("bob", ("hr",))  # groups given to a key do not outrank the file
    with _serve(settings, store) as api:
        assert _ask(api, ann_key).status_code == 200
        assert _ask(api, bob_key).status_code == 200
        assert [u.groups for u in api.service.users] == [frozenset({"hr"}), frozenset()]
        add_user(users, "ann", "pw-ann-123", [])  # demoted
        assert _ask(api, ann_key).status_code == 200
        assert api.service.users[-1] == User("ann")
        users.write_text(users.read_text().split('[users."bob"]')[0], "utf-8")  # bob deleted
        assert _ask(api, bob_key).status_code == 401
    assert len(api.service.users) == 3


def test_keys_add_refuses_a_user_absent_from_the_users_file(tmp_path: Path) -> None:
    users = tmp_path / "users.toml"
    add_user(users, "ann", "pw-ann-123", ["hr"])
    store = open_key_store(_settings(tmp_path, users=users))
    with pytest.raises(ConfigError, match="not in the users file"):
        store.add("carol", ("hr",))


def test_without_a_users_file_keys_keep_their_own_groups(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    store = open_key_store(settings)
    key, _ = store.add("ann", ("hr",))
    with _serve(settings, store) as api:
        assert _ask(api, key).status_code == 200
    assert api.service.users == [User("ann", frozenset({"hr"}))]


def test_anonymous_loopback_refuses_browser_and_rebound_requests(tmp_path: Path) -> None:
    """D23: a page's cross-site POST (Origin, text/plain) or a rebound Host is not answered."""
    settings = _settings(tmp_path, loopback=True)
    with _serve(settings) as api:
        assert _ask(api).status_code == 200
        port = settings.api.port
        assert _ask(api, Host=f"localhost:{port}").status_code == 200
        origin = _ask(api, Origin="http://localhost:8031")
        assert origin.status_code == 403
        assert origin.json()["error"]["code"] == "cross_site_request"
        assert _ask(api, Host=f"evil.example:{port}").status_code == 403
        assert _ask(api, Host="127.0.0.1").status_code == 403  # another port, or none
        plain = httpx.post(
            api.url + "/v1/chat/completions",
            content=b'{"messages":[{"role":"user","content":"=1+1"}]}',
            headers={"Content-Type": "text/plain"},
            timeout=30,
        )
        assert plain.status_code == 415
        assert plain.json()["error"]["code"] == "unsupported_media_type"
        none = httpx.post(
            api.url + "/v1/chat/completions",
            content=b'{"messages":[{"role":"user","content":"q"}]}',
            timeout=30,
        )
        assert none.status_code == 415
    assert len(api.service.users) == 2


def test_a_key_holder_also_needs_a_json_body(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    store = open_key_store(settings)
    key, _ = store.add("ann", ())
    with _serve(settings, store) as api:
        sent = {"Authorization": f"Bearer {key}", "Content-Type": "text/plain"}
        body = b'{"messages":[{"role":"user","content":"q"}]}'
        refused = httpx.post(api.url + "/v1/chat/completions", content=body, headers=sent)
        assert refused.status_code == 415
        sent["Content-Type"] = "Application/JSON; charset=utf-8"
        assert (
            httpx.post(api.url + "/v1/chat/completions", content=body, headers=sent).status_code
            == 200
        )
