"""What to sync: the tenant, the app's credentials and the drives, from a TOML file.

Secrets are read from a file the settings name (or the environment), never from
the command line, and are never logged or shown in a ``repr``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from assistant.errors import ConfigError

__all__ = ["Credential", "Drive", "SyncConfig", "config_path", "load_config"]

GRAPH_URL = "https://graph.microsoft.com/v1.0"
AUTHORITY_URL = "https://login.microsoftonline.com"
CONFIG_VARIABLE = "ASSISTANT_SHAREPOINT_CONFIG"
SECRET_VARIABLE = "ASSISTANT_SHAREPOINT_CLIENT_SECRET"
_DRIVE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")


@dataclass(frozen=True, slots=True)
class Credential:
    """A client secret, or a certificate's private key (PEM) and its SHA-1 thumbprint."""

    secret: str = field(default="", repr=False)
    private_key: str = field(default="", repr=False)
    thumbprint: str = ""


@dataclass(frozen=True, slots=True)
class Drive:
    """One document library (a drive id), synced whole, under a short local name."""

    name: str
    drive_id: str


@dataclass(frozen=True, slots=True)
class SyncConfig:
    """Everything one ``sync sharepoint`` run needs besides the index settings."""

    tenant: str
    client_id: str
    credential: Credential
    drives: tuple[Drive, ...]
    authority: str = AUTHORITY_URL
    graph: str = GRAPH_URL
    ca_bundle: str = ""  # a CA file for a TLS-inspecting proxy ("" : the system's)
    anonymous_links_public: bool = False
    max_wait: float = 120.0  # longest single Retry-After waited out, in seconds
    max_retries: int = 6


def load_config(path: Path, environ: Mapping[str, str]) -> SyncConfig:
    """Read a sync configuration file.

    Raises:
        ConfigError: The file is missing or malformed, or names no credential.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read sync configuration {path}: {exc}") from exc
    where = str(path)
    drives = tuple(_drive(entry, where=where) for entry in _list(data, "drives", where))
    if not drives:
        raise ConfigError(f"{where}: name at least one [[drives]] entry")
    if len({d.name for d in drives}) != len(drives):
        raise ConfigError(f"{where}: two drives share a name")
    return SyncConfig(
        tenant=_text(data, "tenant", where),
        client_id=_text(data, "client_id", where),
        credential=_credential(data, path.parent, environ, where=where),
        drives=drives,
        authority=str(data.get("authority", AUTHORITY_URL)).rstrip("/"),
        graph=str(data.get("graph", GRAPH_URL)).rstrip("/"),
        ca_bundle=str(data.get("ca_bundle", "")),
        anonymous_links_public=bool(data.get("anonymous_links_public", False)),
        max_wait=float(data.get("max_wait_seconds", 120.0)),
        max_retries=int(data.get("max_retries", 6)),
    )


def _text(data: Mapping[str, object], key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: '{key}' is required")
    return value.strip()


def _list(data: Mapping[str, object], key: str, where: str) -> list[Mapping[str, object]]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ConfigError(f"{where}: '{key}' must be a list of tables ([[{key}]])")
    return value


def _drive(entry: Mapping[str, object], *, where: str) -> Drive:
    name = _text(entry, "name", where)
    if not _DRIVE_NAME.fullmatch(name):
        raise ConfigError(f"{where}: drive name {name!r} must be a-z, 0-9, - or _ (<= 40)")
    return Drive(name=name, drive_id=_text(entry, "id", where))


def _credential(
    data: Mapping[str, object], base: Path, environ: Mapping[str, str], *, where: str
) -> Credential:
    if "client_secret" in data:
        raise ConfigError(f"{where}: keep the secret in a file ('secret_file'), not here")
    if "secret_file" in data:
        return Credential(secret=_read_secret(base / str(data["secret_file"]), where))
    if "certificate_file" in data:
        key = _read_secret(base / str(data["certificate_file"]), where)
        return Credential(private_key=key, thumbprint=_text(data, "thumbprint", where))
    secret = environ.get(SECRET_VARIABLE, "").strip()
    if not secret:
        raise ConfigError(
            f"{where}: give 'secret_file' or 'certificate_file', or set {SECRET_VARIABLE}"
        )
    return Credential(secret=secret)


def _read_secret(path: Path, where: str) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read {path}: {exc}") from exc
    if not text:
        raise ConfigError(f"{where}: {path} is empty")
    return text


def config_path(flag: Path | None, environ: Mapping[str, str]) -> Path:
    """Return the configuration file named by ``--config`` or ``ASSISTANT_SHAREPOINT_CONFIG``.

    Raises:
        ConfigError: Neither names one.
    """
    if flag is not None:
        return flag
    named = environ.get(CONFIG_VARIABLE, "")
    if not named:
        raise ConfigError(
            "name the sync configuration: --config FILE or ASSISTANT_SHAREPOINT_CONFIG"
        )
    return Path(named)
