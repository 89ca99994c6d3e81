"""Tokens for Microsoft Graph: OAuth2 client credentials through msal (its only importer)."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

import msal

from assistant.errors import SyncError
from assistant.sync.graph import TRANSPORT_ERRORS
from assistant.sync.settings import AUTHORITY_URL, SyncConfig

__all__ = ["TokenSource"]

logger = logging.getLogger(__name__)

_FAILED: tuple[type[Exception], ...] = (*TRANSPORT_ERRORS, OSError, ValueError)


class TokenSource:
    """An app-only access token for Graph, cached by msal until shortly before it expires."""

    def __init__(self, config: SyncConfig, *, http: Any) -> None:
        """Keep the settings; nothing is sent until the first `token` call.

        Args:
            config: The tenant, app and credential.
            http: The sync's HTTP client (`assistant.sync.graph.http_client`).
        """
        self._config = config
        self._http = http
        self._app: msal.ConfidentialClientApplication | None = None
        graph = urlsplit(config.graph)
        self._scopes = [f"{graph.scheme}://{graph.netloc}/.default"]

    def _open(self) -> msal.ConfidentialClientApplication:
        """Build the msal app (it reads the authority's OpenID configuration at once)."""
        config = self._config
        credential: str | dict[str, str] = config.credential.secret
        if not credential:
            credential = {
                "private_key": config.credential.private_key,
                "thumbprint": config.credential.thumbprint,
            }
        # Instance discovery asks Microsoft's cloud about the authority; for any other
        # authority (a sovereign cloud named in full, or a test's) it is skipped.
        standard = config.authority == AUTHORITY_URL
        return msal.ConfidentialClientApplication(
            config.client_id,
            client_credential=credential,
            authority=f"{config.authority}/{config.tenant}",
            http_client=self._http,
            instance_discovery=None if standard else False,
        )

    def token(self) -> str:
        """Return a valid access token.

        Raises:
            SyncError: Sign-in was refused or the authority could not be reached.
        """
        try:
            if self._app is None:
                self._app = self._open()
            result = self._app.acquire_token_for_client(scopes=self._scopes)
        except _FAILED as exc:
            raise SyncError(f"cannot reach the sign-in authority: {exc}") from exc
        token = result.get("access_token") if isinstance(result, dict) else None
        if not isinstance(token, str):
            error = result.get("error", "unknown") if isinstance(result, dict) else "unknown"
            described = result.get("error_description", "") if isinstance(result, dict) else ""
            raise SyncError(
                f"sign-in refused ({error}): {described.splitlines()[0] if described else ''}"
            )
        return token
