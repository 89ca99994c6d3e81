"""A stateful fake of Microsoft Graph and its sign-in authority, served over TLS on 127.0.0.1.

Real HTTP, real TLS (msal insists on an https authority): `FakeGraph` generates a
self-signed certificate for 127.0.0.1, serves the OpenID configuration and the
token endpoint of ``/{tenant}`` and the Graph calls a sync makes under ``/v1.0``:
``/drives/{id}/root/delta`` in pages with ``@odata.nextLink`` and
``@odata.deltaLink``, ``deleted`` facets, ``@microsoft.graph.sharedChanged``,
``/items/{id}/permissions`` (inherited ones included, with ``inheritedFrom``) and
``/items/{id}/content`` (a redirect to a download URL, as Graph does). Faults are
queued with `FakeGraph.fail`: ``429`` / ``503`` with ``Retry-After``, ``500``, or
``drop`` (the connection closes in the middle of a body); `expire_links` makes
every delta link answer ``410 Gone``.

Use: ``with FakeGraph.started(tmp_dir) as graph: drive = graph.drive("d1")`` and
change ``drive`` with `add_file`, `edit`, `rename`, `move`, `delete`, `share`;
`FakeDrive.files` is the drive's state now, what a fresh sync must index.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import itertools
import json
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

TENANT = "contoso.example"
CLIENT_ID = "11111111-2222-3333-4444-555555555555"
SECRET = "fake-secret-value"  # the fake's own
WEB = "https://contoso.sharepoint.example/sites/policies/Shared%20Documents"


@dataclass(slots=True)
class FakeItem:
    """One item of a fake drive, with its last change and sharing sequence numbers."""

    item_id: str
    name: str
    parent: str
    folder: bool = False
    content: bytes = b""
    version: int = 1
    grants: list[dict[str, Any]] = field(default_factory=list)
    deleted: bool = False
    changed: int = 0
    shared: int = 0


class FakeDrive:
    """A drive whose changes are numbered, so a delta link is a sequence number."""

    def __init__(self, drive_id: str, *, page_size: int) -> None:
        self.drive_id = drive_id
        self.page_size = page_size
        self.seq = 0
        self.valid_from = 0  # delta links older than this answer 410
        self.items: dict[str, FakeItem] = {"root": FakeItem("root", "root", "", folder=True)}
        self._ids = itertools.count(1)

    def _touch(self, item: FakeItem, *, shared: bool = False) -> None:
        self.seq += 1
        item.changed = self.seq
        if shared:
            item.shared = self.seq

    def add_file(
        self, name: str, content: bytes, *, parent: str = "root", grants: list[dict[str, Any]]
    ) -> str:
        """Add a file with its own grants; return its id."""
        item = FakeItem(f"ITEM{next(self._ids):05d}", name, parent, content=content, grants=grants)
        self.items[item.item_id] = item
        self._touch(item)
        return item.item_id

    def add_folder(self, name: str, *, parent: str = "root", grants: list[dict[str, Any]]) -> str:
        """Add a folder; its grants are inherited by everything below it."""
        item = FakeItem(f"DIR{next(self._ids):05d}", name, parent, folder=True, grants=grants)
        self.items[item.item_id] = item
        self._touch(item)
        return item.item_id

    def edit(self, item_id: str, content: bytes) -> None:
        """Replace a file's content (a new cTag)."""
        item = self.items[item_id]
        item.content, item.version = content, item.version + 1
        self._touch(item)

    def rename(self, item_id: str, name: str) -> None:
        """Rename an item (its content, cTag and id stay)."""
        self.items[item_id].name = name
        self._touch(self.items[item_id])

    def move(self, item_id: str, parent: str) -> None:
        """Move an item under another folder."""
        self.items[item_id].parent = parent
        self._touch(self.items[item_id])

    def delete(self, item_id: str) -> None:
        """Delete an item and, for a folder, everything below it (Graph reports them all)."""
        for child in [i for i in self.live() if i.parent == item_id]:
            self.delete(child.item_id)
        self.items[item_id].deleted = True
        self._touch(self.items[item_id])

    def share(self, item_id: str, grants: list[dict[str, Any]]) -> None:
        """Replace an item's own grants: a sharing change (shown with sharedChanged)."""
        self.items[item_id].grants = grants
        self._touch(self.items[item_id], shared=True)

    def expire_links(self) -> None:
        """Make every delta link handed out so far answer 410 Gone."""
        self.valid_from = self.seq + 1

    def live(self) -> list[FakeItem]:
        """Return the items not deleted, root included."""
        return [i for i in self.items.values() if not i.deleted]

    def effective_grants(self, item_id: str) -> list[dict[str, Any]]:
        """Return an item's grants and those it inherits, as /permissions lists them."""
        grants = [dict(g) for g in self.items[item_id].grants]
        parent = self.items[item_id].parent
        while parent:
            above = self.items[parent]
            grants.extend({**g, "inheritedFrom": {"id": parent}} for g in above.grants)
            parent = above.parent
        return grants

    def files(self) -> dict[str, FakeItem]:
        """Return the files not deleted, by id."""
        return {i.item_id: i for i in self.live() if not i.folder}

    def path_of(self, item_id: str) -> str:
        """Return an item's path from the root, for its web URL."""
        parts: list[str] = []
        item = self.items[item_id]
        while item.parent:
            parts.append(item.name)
            item = self.items[item.parent]
        return "/".join(reversed(parts))

    def as_json(self, item: FakeItem, *, since: int | None) -> dict[str, Any]:
        """Return an item as a delta page lists it."""
        body: dict[str, Any] = {"id": item.item_id, "name": item.name}
        if item.parent:
            body["parentReference"] = {"id": item.parent, "driveId": self.drive_id}
        if item.deleted:
            body["deleted"] = {"state": "deleted"}
            return body
        if item.item_id == "root":
            body["root"] = {}
        if item.folder:
            body["folder"] = {"childCount": 0}
        else:
            body["file"] = {"mimeType": "application/octet-stream"}
            body["cTag"] = f'"c:{{{item.item_id}}},{item.version}"'
            body["size"] = len(item.content)
        body["webUrl"] = f"{WEB}/{self.path_of(item.item_id)}"
        if since is not None and item.shared > since:
            body["@microsoft.graph.sharedChanged"] = "True"
        return body

    def changes_since(self, since: int | None, until: int) -> list[FakeItem]:
        """Return the items changed in (since, until], or every live item for a full listing."""
        if since is None:
            return sorted(self.live(), key=lambda i: (i.item_id != "root", i.item_id))
        return sorted(
            (i for i in self.items.values() if since < i.changed <= until), key=lambda i: i.changed
        )


def user(email: str, *roles: str) -> dict[str, Any]:
    """Return a grant to one user."""
    return {"roles": list(roles or ["read"]), "grantedToV2": {"user": {"email": email}}}


def group(name: str, *roles: str) -> dict[str, Any]:
    """Return a grant to a group, by display name."""
    return {"roles": list(roles or ["read"]), "grantedToV2": {"group": {"displayName": name}}}


def link(scope: str) -> dict[str, Any]:
    """Return a sharing link of ``scope`` ("organization" or "anonymous")."""
    return {"roles": ["read"], "link": {"scope": scope, "type": "view"}}


class FakeGraph:
    """The server: drives by id, tokens issued, faults queued, requests counted."""

    def __init__(self, cert_dir: Path, *, page_size: int = 3) -> None:
        self.page_size = page_size
        self.ca_file, context = _certificate(cert_dir)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._server.graph = self  # type: ignore[attr-defined]
        self.drives: dict[str, FakeDrive] = {}
        self.tokens: set[str] = set()
        self.faults: list[tuple[str, float]] = []
        self.counts: dict[str, int] = {"token": 0, "delta": 0, "permissions": 0, "content": 0}
        self.lock = threading.Lock()

    @property
    def base(self) -> str:
        """Return ``https://127.0.0.1:PORT``."""
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    @classmethod
    @contextmanager
    def started(cls, cert_dir: Path, *, page_size: int = 3) -> Iterator[FakeGraph]:
        """Serve in a thread until the block ends."""
        graph = cls(cert_dir, page_size=page_size)
        thread = threading.Thread(target=graph._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield graph
        finally:
            graph._server.shutdown()
            graph._server.server_close()
            thread.join()

    def drive(self, drive_id: str) -> FakeDrive:
        """Return a new, empty drive."""
        self.drives[drive_id] = FakeDrive(drive_id, page_size=self.page_size)
        return self.drives[drive_id]

    def fail(self, kind: str, *, times: int = 1, retry_after: float = 0) -> None:
        """Queue a fault for the next Graph requests: "429", "503", "500" or "drop"."""
        self.faults.extend([(kind, retry_after)] * times)

    def reset_counts(self) -> None:
        """Zero the request counters."""
        for key in self.counts:
            self.counts[key] = 0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without this, Nagle's algorithm and the
    # client's delayed ACK hold each kept-alive answer for 40 ms.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    @property
    def graph(self) -> FakeGraph:
        return self.server.graph  # type: ignore[attr-defined,no-any-return]

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        if url.path.endswith("/v2.0/.well-known/openid-configuration"):
            self._json(200, _openid(self.graph.base, parts[0]))
        elif parts[0] == "download":
            drive, item = self.graph.drives[parts[1]], parts[2]
            self._bytes(200, drive.items[item].content)
        elif parts[0] == "v1.0":
            self._graph(parts[1:], parse_qs(url.query))
        else:
            self._json(404, {"error": {"code": "itemNotFound"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        form = parse_qs(self.rfile.read(length).decode())
        if not self.path.endswith("/oauth2/v2.0/token"):
            self._json(404, {"error": "not_found"})
            return
        ok = form.get("client_id") == [CLIENT_ID] and form.get("client_secret") == [SECRET]
        if not ok or form.get("grant_type") != ["client_credentials"]:
            described = "AADSTS7000215: Invalid client secret provided."
            self._json(401, {"error": "invalid_client", "error_description": described})
            return
        with self.graph.lock:
            self.graph.counts["token"] += 1
            token = f"token-{len(self.graph.tokens) + 1}"
            self.graph.tokens.add(token)
        self._json(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3599})

    def _graph(self, parts: list[str], query: dict[str, list[str]]) -> None:
        token = self.headers.get("Authorization", "").removeprefix("Bearer ")
        if token not in self.graph.tokens:
            self._json(401, {"error": {"code": "InvalidAuthenticationToken"}})
            return
        with self.graph.lock:
            fault = self.graph.faults.pop(0) if self.graph.faults else None
        if fault is not None and self._fault(*fault):
            return
        drive = self.graph.drives[parts[1]]
        if parts[2:4] == ["root", "delta"]:
            self._delta(drive, query)
        elif parts[4:] == ["permissions"]:
            self.graph.counts["permissions"] += 1
            self._json(200, {"value": drive.effective_grants(parts[3])})
        elif parts[4:] == ["content"]:
            self.graph.counts["content"] += 1
            self.send_response(302)
            self.send_header("Location", f"{self.graph.base}/download/{drive.drive_id}/{parts[3]}")
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._json(404, {"error": {"code": "itemNotFound"}})

    def _fault(self, kind: str, retry_after: float) -> bool:
        if kind in ("429", "503"):
            self.send_response(int(kind))
            self.send_header("Retry-After", f"{retry_after:g}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return True
        if kind == "500":
            self._json(500, {"error": {"code": "generalException"}})
            return True
        if kind == "drop":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "4096")
            self.end_headers()
            self.wfile.write(b'{"value": [{"id": "')
            self.wfile.flush()
            self.close_connection = True
            return True
        return False

    def _delta(self, drive: FakeDrive, query: dict[str, list[str]]) -> None:
        self.graph.counts["delta"] += 1
        since = int(query["token"][0]) if "token" in query else None
        if since is not None and since < drive.valid_from:
            self._json(410, {"error": {"code": "resyncRequired", "message": "Resync required."}})
            return
        until = int(query.get("until", [str(drive.seq)])[0])
        page = int(query.get("page", ["0"])[0])
        items = drive.changes_since(since, until)
        size = drive.page_size
        body: dict[str, Any] = {
            "value": [drive.as_json(i, since=since) for i in items[page * size : (page + 1) * size]]
        }
        root = f"{self.graph.base}/v1.0/drives/{drive.drive_id}/root/delta"
        if (page + 1) * size < len(items):
            token = "" if since is None else f"token={since}&"
            body["@odata.nextLink"] = f"{root}?{token}until={until}&page={page + 1}"
        else:
            body["@odata.deltaLink"] = f"{root}?token={until}"
        self._json(200, body)

    def _json(self, status: int, body: object) -> None:
        self._bytes(status, json.dumps(body).encode(), kind="application/json")

    def _bytes(self, status: int, data: bytes, *, kind: str = "application/octet-stream") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _openid(base: str, tenant: str) -> dict[str, object]:
    return {
        "token_endpoint": f"{base}/{tenant}/oauth2/v2.0/token",
        "authorization_endpoint": f"{base}/{tenant}/oauth2/v2.0/authorize",
        "issuer": f"{base}/{tenant}/v2.0",
        "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt"],
        "response_types_supported": ["code", "id_token", "token"],
    }


def _certificate(folder: Path) -> tuple[Path, ssl.SSLContext]:
    """Make a self-signed certificate for 127.0.0.1; return its file and a server context."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    cert_file, key_file = folder / "graph-cert.pem", folder / "graph-key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return cert_file, context
