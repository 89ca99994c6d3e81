"""Microsoft Graph over HTTP (httpx): delta pages, permissions and file content.

httpx rather than msgraph-sdk: the SDK is asynchronous, pulls in Kiota and a dozen
packages, and hides the protocol that the tests fake; these three calls need
neither. Throttling (429 and 503 with ``Retry-After``) and dropped connections
are retried within bounds; ``410 Gone`` raises `ResyncRequired`.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from assistant.errors import SyncError
from assistant.sync.settings import SyncConfig

__all__ = [
    "TRANSPORT_ERRORS",
    "DeltaPage",
    "DriveItem",
    "Grant",
    "GraphClient",
    "ResyncRequired",
    "http_client",
]

logger = logging.getLogger(__name__)

_SELECT = "id,name,file,folder,deleted,parentReference,webUrl,cTag,size"
_RETRIED = (httpx.TransportError,)
# Throttled (429, 503: wait as Retry-After says) or a passing fault of the service.
_TRANSIENT = frozenset({429, 500, 502, 503, 504})
# What a caller of `http_client` (msal) may see fail, besides an error answer.
TRANSPORT_ERRORS: tuple[type[Exception], ...] = (httpx.HTTPError,)


def http_client(config: SyncConfig) -> httpx.Client:
    """Return the one HTTP client of a sync, for Graph and for msal alike.

    msal's own (requests) would let ``REQUESTS_CA_BUNDLE`` override the configured
    CA file; this one trusts exactly ``config.ca_bundle`` when it is set.
    """
    verify = ssl.create_default_context(cafile=config.ca_bundle or None)
    return httpx.Client(verify=verify, timeout=httpx.Timeout(60.0), follow_redirects=True)


class ResyncRequired(SyncError):
    """The delta token expired (410 Gone): enumerate the drive again and prune."""


@dataclass(frozen=True, slots=True)
class DriveItem:
    """One item of a delta page: a file or a folder, perhaps deleted."""

    item_id: str
    name: str = ""
    parent_id: str = ""
    is_folder: bool = False
    deleted: bool = False
    web_url: str = ""
    ctag: str = ""
    size: int = 0
    sharing_changed: bool = False


@dataclass(frozen=True, slots=True)
class DeltaPage:
    """One page of a delta feed; exactly one of the links is set."""

    items: tuple[DriveItem, ...]
    next_link: str = ""
    delta_link: str = ""


@dataclass(frozen=True, slots=True)
class Grant:
    """One permission of an item, inherited or its own."""

    roles: tuple[str, ...]
    users: tuple[str, ...] = ()  # sign-in names (email or user principal name)
    groups: tuple[str, ...] = ()  # display names
    link_scope: str = ""  # "anonymous", "organization", "users", "existingAccess" or ""


class GraphClient:
    """The few Graph calls a sync makes, with bounded retries."""

    def __init__(
        self,
        config: SyncConfig,
        token: Callable[[], str],
        *,
        http: httpx.Client,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Call ``config.graph`` through ``http`` (from `http_client`; closed by `close`)."""
        self._config = config
        self._token = token
        self._sleep = sleep
        self._http = http
        self.requests: dict[str, int] = {"delta": 0, "permissions": 0, "content": 0}

    def close(self) -> None:
        """Close the HTTP connections."""
        self._http.close()

    def delta(self, drive_id: str, link: str = "") -> DeltaPage:
        """Return one delta page: from ``link`` (a next or delta link), else from the start.

        Raises:
            ResyncRequired: The link expired.
            SyncError: Graph failed or could not be reached within the retries.
        """
        url = link or f"{self._config.graph}/drives/{drive_id}/root/delta?$select={_SELECT}"
        self.requests["delta"] += 1
        # Without this header a change of sharing alone does not appear in the feed.
        headers = {
            "Prefer": "deltashowsharingchanges, hierarchicalsharing, deltashowremovedasdeleted"
        }
        body = self._send(url, headers=headers).json()
        items = tuple(_item(raw) for raw in body.get("value", []) if isinstance(raw, dict))
        return DeltaPage(
            items,
            next_link=str(body.get("@odata.nextLink", "")),
            delta_link=str(body.get("@odata.deltaLink", "")),
        )

    def permissions(self, drive_id: str, item_id: str) -> tuple[Grant, ...]:
        """Return an item's permissions, inherited ones included."""
        url = f"{self._config.graph}/drives/{drive_id}/items/{item_id}/permissions"
        self.requests["permissions"] += 1
        grants: list[Grant] = []
        while url:
            body = self._send(url).json()
            grants.extend(_grant(raw) for raw in body.get("value", []) if isinstance(raw, dict))
            url = str(body.get("@odata.nextLink", ""))
        return tuple(grants)

    def content(self, drive_id: str, item_id: str) -> bytes:
        """Return a file's bytes (Graph redirects to a pre-authenticated download URL)."""
        self.requests["content"] += 1
        return self._send(f"{self._config.graph}/drives/{drive_id}/items/{item_id}/content").content

    def _send(self, url: str, *, headers: Mapping[str, str] | None = None) -> httpx.Response:
        refreshed = False
        for attempt in range(self._config.max_retries + 1):
            last = attempt == self._config.max_retries
            sent = {"Authorization": f"Bearer {self._token()}", **(headers or {})}
            try:
                response = self._http.get(url, headers=sent)
            except _RETRIED as exc:
                if last:
                    raise SyncError(f"Graph could not be reached: {type(exc).__name__}") from exc
                logger.warning("Graph request failed (%s); retrying", type(exc).__name__)
                self._sleep(_backoff(attempt, ceiling=self._config.max_wait))
                continue
            if response.status_code == 410:
                raise ResyncRequired("the delta link expired (410 Gone): a full resync follows")
            if response.status_code == 401 and not refreshed:
                refreshed = True  # a token revoked early: msal's cache cannot know
                continue
            if response.status_code in _TRANSIENT and not last:
                wait = _retry_after(response, attempt, ceiling=self._config.max_wait)
                logger.info("Graph answered %d; waiting %.1f s", response.status_code, wait)
                self._sleep(wait)
                continue
            if response.is_success:
                return response
            raise SyncError(f"Graph answered {response.status_code} for {_path_of(url)}")
        raise SyncError(f"Graph kept throttling {_path_of(url)}; try again later")


def _retry_after(response: httpx.Response, attempt: int, *, ceiling: float) -> float:
    raw = response.headers.get("Retry-After", "")
    try:
        wait = float(raw)
    except ValueError:
        return _backoff(attempt, ceiling=ceiling)
    return max(0.0, min(wait, ceiling))


def _backoff(attempt: int, *, ceiling: float) -> float:
    return min(0.5 * 2.0**attempt, ceiling)


def _path_of(url: str) -> str:
    """Return a URL without its query, whose tokens (delta links) are not for the log."""
    return url.split("?", 1)[0]


def _item(raw: Mapping[str, Any]) -> DriveItem:
    parent = raw.get("parentReference") or {}
    return DriveItem(
        item_id=str(raw.get("id", "")),
        name=str(raw.get("name", "")),
        parent_id=str(parent.get("id", "")) if isinstance(parent, dict) else "",
        is_folder="folder" in raw or "root" in raw,
        deleted="deleted" in raw,
        web_url=str(raw.get("webUrl", "")),
        ctag=str(raw.get("cTag", "")),
        size=int(raw.get("size", 0) or 0),
        sharing_changed="@microsoft.graph.sharedChanged" in raw,
    )


def _grant(raw: Mapping[str, Any]) -> Grant:
    identities = [raw.get("grantedToV2"), *(raw.get("grantedToIdentitiesV2") or [])]
    users: list[str] = []
    groups: list[str] = []
    for identity in identities:
        if not isinstance(identity, dict):
            continue
        for key in ("user", "siteUser"):
            who = identity.get(key)
            if isinstance(who, dict):
                name = who.get("email") or who.get("userPrincipalName") or who.get("loginName")
                if isinstance(name, str) and name:
                    users.append(name)
        for key in ("group", "siteGroup"):
            group = identity.get(key)
            if isinstance(group, dict) and isinstance(group.get("displayName"), str):
                groups.append(group["displayName"])
    link = raw.get("link")
    scope = str(link.get("scope", "")) if isinstance(link, dict) else ""
    roles = raw.get("roles") or []
    return Grant(tuple(str(r) for r in roles), tuple(users), tuple(groups), scope)
