"""Per-document access: audiences at ingest, identity, and enforcement on every path.

Real ingests into real Chroma (with the fast fake embedder), real HTTP servers.
The property test over random documents and users is `tests/test_access_props.py`.
"""

from __future__ import annotations

import io
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from assistant.cli.search import main
from assistant.config import Settings, StoreSettings, UISettings
from assistant.documents.access import parse_rules
from assistant.index.chroma import ChromaIndex, forget_cached_clients
from assistant.index.codec import ADMIN_ONLY, decode_audience
from assistant.index.ingest import ingest
from assistant.retrieval.factory import open_retriever
from assistant.types import ADMIN_GROUP, User
from assistant.users import add_user, load_directory
from tests.conftest import FakeEmbedder, free_port
from tests.support.served_ui import launched
from tests.web.test_login_required import anonymous, routes

CORPUS = {
    "leave.md": "# Leave Policy\n\nStaff get 25 days of annual leave each year.\n",
    "hr/salaries.md": "# Salary Bands\n\nThe zorbex band pays executives nine florins.\n",
    "board.md": (
        "---\ntitle: Board Minutes\naudience: [board]\ntags: [secretive]\n---\n"
        "# Board Minutes\n\nThe board approved the merger with Plumtree.\n"
    ),
}
ACCESS = "# who reads what\nhr/** -> hr\n"
ANN, BOB = User("ann", frozenset({"hr"})), User("bob")


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def settings_for(index: Path, **store: object) -> Settings:
    return replace(Settings(), store=StoreSettings(path=index, **store))  # type: ignore[arg-type]


def audiences(settings: Settings) -> dict[str, tuple[str, ...] | None]:
    forget_cached_clients()
    index = ChromaIndex(settings.store, embedder_identity=FakeEmbedder().identity, dimension=64)
    return {s: m.audience for s, m in index.load_snapshot().docs.items()}


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = write(tmp_path / "docs", CORPUS)
    (root / ".access").write_text(ACCESS, encoding="utf-8")
    return root


def test_front_matter_and_access_rules_are_stored_on_every_chunk(
    docs: Path, tmp_path: Path
) -> None:
    settings = settings_for(tmp_path / "idx")
    ingest([docs], settings=settings, embedder=FakeEmbedder())

    assert audiences(settings) == {
        "leave.md": (),
        "hr/salaries.md": ("hr",),
        "board.md": ("board",),
    }


def test_changing_only_the_access_file_re_ingests_and_a_running_search_obeys(
    docs: Path, tmp_path: Path
) -> None:
    settings = settings_for(tmp_path / "idx")
    embedder = FakeEmbedder()
    ingest([docs], settings=settings, embedder=embedder)
    retriever = open_retriever(settings, embedder=embedder)
    assert "hr/salaries.md" in {h.chunk.source for h in retriever.search("zorbex", user=ANN).hits}

    (docs / ".access").write_text("hr/** -> payroll\n", encoding="utf-8")
    report = ingest([docs], settings=settings, embedder=embedder)

    assert report.changed == ("hr/salaries.md",)
    assert report.unchanged == ("board.md", "leave.md")
    sources = {h.chunk.source for h in retriever.search("zorbex band", user=ANN).hits}
    assert "hr/salaries.md" not in sources  # the same process, the next question
    payroll = User("pat", frozenset({"payroll"}))
    # The widened audience shows once the changed rows are loaded (off the question path).
    deadline = time.monotonic() + 20
    while not retriever.refreshed() and time.monotonic() < deadline:
        retriever.search("zorbex", user=payroll)
        time.sleep(0.05)
    assert "hr/salaries.md" in {
        h.chunk.source for h in retriever.search("zorbex", user=payroll).hits
    }


def test_an_unparsable_rule_stops_its_documents_and_changes_nothing_stored(
    docs: Path, tmp_path: Path
) -> None:
    settings = settings_for(tmp_path / "idx")
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    (docs / ".access").write_text("hr/** -> hr\nboard/** => board\n", encoding="utf-8")
    (docs / "leave.md").write_text(CORPUS["leave.md"] + "\nNew line.\n", encoding="utf-8")

    report = ingest([docs], settings=settings, embedder=FakeEmbedder())

    reasons = {p.source: p.reason for p in report.problems}
    assert set(reasons) == set(CORPUS)
    assert all(".access" in r and "line 2" in r for r in reasons.values()), reasons
    assert report.removed == ()
    assert report.chunks_written == 0
    assert audiences(settings)["hr/salaries.md"] == ("hr",)


def test_a_bad_front_matter_audience_names_the_line(docs: Path, tmp_path: Path) -> None:
    write(docs, {"bad.md": "---\ntitle: X\naudience: {hr: yes}\n---\n# X\n\nText.\n"})

    report = ingest([docs], settings=settings_for(tmp_path / "idx"), embedder=FakeEmbedder())

    [problem] = report.problems
    assert problem.source == "bad.md"
    assert "front matter line 3" in problem.reason


def test_the_default_audience_restricts_documents_without_one(docs: Path, tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "idx", default_audience=("staff",))
    ingest([docs], settings=settings, embedder=FakeEmbedder())

    assert audiences(settings)["leave.md"] == ("staff",)
    assert audiences(settings)["hr/salaries.md"] == ("hr",)  # a rule still wins


def test_an_unreadable_stored_audience_is_admin_only() -> None:
    assert decode_audience({"audience_json": "not json"}) == ADMIN_ONLY
    assert decode_audience({"audience_json": '{"hr": 1}'}) == ADMIN_ONLY
    assert decode_audience({"audience_json": '["hr", 3]'}) == ADMIN_ONLY
    assert decode_audience({"audience_json": '["hr"]'}) == ("hr",)
    assert decode_audience({}) == ()  # written before audiences existed: all were public


def test_chunks_that_disagree_make_their_document_admin_only(docs: Path, tmp_path: Path) -> None:
    write(docs, {"long.md": "# Long\n\n## A\n\nFirst part.\n\n## B\n\nSecond part.\n"})
    settings = settings_for(tmp_path / "idx")
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    index = ChromaIndex(settings.store, embedder_identity=FakeEmbedder().identity, dimension=64)
    collection = index._open(create=False)  # damage one row as a broken writer would
    row = collection.get(ids=["long.md#1"], include=["metadatas"])
    collection.update(ids=["long.md#1"], metadatas=[{**row["metadatas"][0], "audience_json": "?"}])

    assert audiences(settings)["long.md"] == ADMIN_ONLY


def test_access_rules_match_like_gitignore() -> None:
    rules = parse_rules("** -> staff\nhr/** -> hr\nhr/public/*.md -> everyone\n", name="a")
    assert rules.audience_of("x.md") == ("staff",)
    assert rules.audience_of("hr/a/b.pdf") == ("hr",)
    assert rules.audience_of("hr/public/p.md") == ()
    assert rules.audience_of("hr/public/deep/p.md") == ("hr",)


def test_users_file_logins_and_groups(tmp_path: Path) -> None:
    path = tmp_path / "users.toml"
    add_user(path, "ann", "s3cret", ["HR", "managers"])
    add_user(path, "bob", "pw", [])
    directory = load_directory(path, auth_pairs=[("old", "pass")])

    assert "s3cret" not in path.read_text()
    assert directory.authenticate("ann", "s3cret")
    assert not directory.authenticate("ann", "x")
    assert directory.user("ann").groups == {"hr", "managers"}
    assert directory.authenticate("old", "pass")
    assert directory.user("old").groups == frozenset()
    assert not directory.authenticate("nobody", "s3cret")
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_proxy_headers_count_only_from_a_trusted_address() -> None:
    directory = load_directory(None, trusted_proxies=["10.0.0.5"])
    headers = {"X-Forwarded-User": "eve", "X-Forwarded-Groups": "admin, hr"}

    trusted = directory.resolve(login=None, client="10.0.0.5", headers=headers)
    forged = directory.resolve(login=None, client="10.0.0.6", headers=headers)

    assert trusted == User("eve", frozenset({ADMIN_GROUP, "hr"}))
    assert forged == User()  # anonymous: the headers are ignored


def test_cli_searches_as_the_operator_or_as_a_user(docs: Path, tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "idx")
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    users = tmp_path / "users.toml"
    add_user(users, "ann", "pw", ["hr"])
    env = {"ASSISTANT_USERS": str(users), "ASSISTANT_INDEX": str(tmp_path / "idx")}

    def run(*args: str) -> str:
        out = io.StringIO()
        code = main(
            ["search", "--json", *args],
            environ=env,
            stdout=out,
            searcher_factory=lambda s: open_retriever(s, embedder=FakeEmbedder()),
        )
        assert code == 0
        return out.getvalue()

    question = "board merger plumtree zorbex"
    assert "board.md" in run(question)  # the operator reads everything
    as_ann = run(question, "--as", "ann")
    assert "board.md" not in as_ann
    assert "Plumtree" not in as_ann
    assert "hr/salaries.md" in as_ann


# ---------------------------------------------------------------------------
# The web server: anonymous responses (D1), the viewer (D8 and 404s), the proxy
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, object, Path]]:
    tmp = tmp_path_factory.mktemp("access-web")
    docs = write(tmp / "docs", CORPUS)
    (docs / ".access").write_text(ACCESS, encoding="utf-8")
    settings = settings_for(tmp / "idx")
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    users = tmp / "users.toml"
    add_user(users, "ann", "pw-ann", ["hr"])
    add_user(users, "bob", "pw-bob", [])
    settings = replace(
        settings,
        ui=UISettings(port=free_port(), users_file=users, trusted_proxies=("10.9.9.9",)),
    )
    with launched(settings, docs, ingest_first=False) as app:
        yield app.url, app.http_app, tmp


SECRETS = (
    "hr/salaries.md",
    "salaries",
    "Salary Bands",
    "board.md",
    "Board Minutes",
    "secretive",
    "leave.md",
    "Leave Policy",
)


def login(url: str, name: str, password: str) -> str:
    request = urllib.request.Request(
        url + "/login",
        data=f"username={name}&password={password}".encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        method="POST",
    )
    with urllib.request.urlopen(request) as response:
        return "; ".join(c.split(";", 1)[0] for c in response.headers.get_all("Set-Cookie") or [])


def test_no_anonymous_response_names_a_document_or_the_api(served: tuple) -> None:  # type: ignore[type-arg]
    url, app, _ = served
    leaks = []
    for path, method in routes(app):
        status, body = anonymous(url, path, method)
        found = [s for s in SECRETS if s.lower() in body.lower()]
        if found or 'named_endpoints": {"/chat' in body or '\\"/chat\\"' in body:
            leaks.append(f"{method} {path} -> {status}: {found}")
    for path in ("/", "/gradio_api/runs", "/logout", "/config", "/gradio_api/info"):
        status, body = anonymous(url, path, "GET")
        if any(s.lower() in body.lower() for s in SECRETS) or "/chat" in body:
            leaks.append(f"GET {path} -> {status}")
    assert leaks == []


def test_the_viewer_answers_404_for_forbidden_as_for_missing(served: tuple) -> None:  # type: ignore[type-arg]
    url, _, _ = served
    ann, bob = login(url, "ann", "pw-ann"), login(url, "bob", "pw-bob")
    assert anonymous(url, "/doc/hr/salaries.md", "GET", cookie=ann)[0] == 200
    forbidden = anonymous(url, "/doc/hr/salaries.md", "GET", cookie=bob)
    missing = anonymous(url, "/doc/hr/nothing.md", "GET", cookie=bob)
    assert forbidden[0] == missing[0] == 404
    assert anonymous(url, "/doc/leave.md", "GET", cookie=bob)[0] == 200


def test_proxy_headers_from_an_untrusted_address_are_ignored(served: tuple) -> None:  # type: ignore[type-arg]
    url, _, _ = served
    bob = login(url, "bob", "pw-bob")
    request = urllib.request.Request(
        url + "/doc/hr/salaries.md",
        headers={"Cookie": bob, "X-Forwarded-User": "eve", "X-Forwarded-Groups": "admin"},
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 404  # 127.0.0.1 is not the configured proxy


def test_gradio_chat_runs_as_the_logged_in_user(served: tuple) -> None:  # type: ignore[type-arg]
    from gradio_client import Client

    url, _, _ = served
    question = "What does the zorbex band pay?"
    ann = Client(url, auth=("ann", "pw-ann"), verbose=False)
    bob = Client(url, auth=("bob", "pw-bob"), verbose=False)
    as_ann = json.dumps(ann.submit(question, [], [], 4, api_name="/chat").result(timeout=60))
    as_bob = json.dumps(bob.submit(question, [], [], 4, api_name="/chat").result(timeout=60))
    assert "florins" in as_ann
    assert "hr/salaries.md" in as_ann
    assert "florins" not in as_bob
    assert "salaries" not in as_bob
    refused = json.dumps(
        bob.submit("merger?", ["board.md"], [], 4, api_name="/chat").result(timeout=60)
    )
    assert "not in the index" in refused
    assert re.search(r"Plumtree|Board Minutes", refused) is None


def test_trusted_proxy_headers_name_the_user_of_viewer_and_chat(tmp_path: Path) -> None:
    from gradio_client import Client

    docs = write(tmp_path / "docs", CORPUS)
    (docs / ".access").write_text(ACCESS, encoding="utf-8")
    settings = settings_for(tmp_path / "idx")
    ingest([docs], settings=settings, embedder=FakeEmbedder())
    settings = replace(settings, ui=UISettings(port=free_port(), trusted_proxies=("127.0.0.1",)))
    with launched(settings, docs, ingest_first=False) as app:
        url = app.url
        as_hr = {"X-Forwarded-User": "ann", "X-Forwarded-Groups": "HR"}
        request = urllib.request.Request(url + "/doc/hr/salaries.md", headers=as_hr)
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
        assert anonymous(url, "/doc/hr/salaries.md", "GET")[0] == 404
        client = Client(url, headers=as_hr, verbose=False)
        answer = client.submit("What does the zorbex band pay?", [], [], 4, api_name="/chat")
        assert "florins" in json.dumps(answer.result(timeout=60))
        plain = Client(url, verbose=False).submit("zorbex band pay?", [], [], 4, api_name="/chat")
        assert "florins" not in json.dumps(plain.result(timeout=60))
