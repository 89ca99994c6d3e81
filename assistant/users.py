"""Who may log in and which groups they are in (the only module that imports bcrypt).

The users file (``ASSISTANT_USERS``) is TOML::

    [users.alice]
    password = "$2b$12$..."      # a bcrypt hash, never the password
    groups = ["hr", "managers"]

``python -m assistant users add NAME --group hr`` writes it (`add_user`). The
pairs of ``ASSISTANT_AUTH=user:pass`` keep working as users in no group. Behind a
reverse proxy that authenticates (oauth2-proxy and the like), `Directory.resolve`
reads ``X-Forwarded-User`` and ``X-Forwarded-Groups`` only when the request comes
from one of the configured proxy addresses; from anywhere else they are ignored.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
import threading
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import bcrypt

from assistant.config import peer_address
from assistant.errors import ConfigError
from assistant.types import ANONYMOUS, User

__all__ = [
    "Directory",
    "add_user",
    "hash_password",
    "load_directory",
    "proxy_user",
    "valid_group",
]

logger = logging.getLogger(__name__)

USER_HEADER = "x-forwarded-user"
GROUPS_HEADER = "x-forwarded-groups"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}")
_GROUP = re.compile(r"[a-z0-9][a-z0-9_.@+-]{0,63}")
# bcrypt reads at most 72 bytes of a password; longer ones would silently collide.
_MAX_PASSWORD_BYTES = 72


def valid_group(name: str) -> bool:
    """Return whether ``name`` is a group name (lower case letters, digits, ``_.@+-``)."""
    return bool(_GROUP.fullmatch(name))


def hash_password(password: str) -> str:
    """Return the bcrypt hash of ``password``.

    Raises:
        ConfigError: Empty, or longer than bcrypt reads (72 bytes).
    """
    data = password.encode("utf-8")
    if not data:
        raise ConfigError("the password is empty")
    if len(data) > _MAX_PASSWORD_BYTES:
        raise ConfigError(f"the password is longer than {_MAX_PASSWORD_BYTES} bytes")
    return bcrypt.hashpw(data, bcrypt.gensalt()).decode("ascii")


@dataclass(frozen=True, slots=True)
class _Account:
    user: User
    password_hash: str = ""
    plain: str = ""  # ASSISTANT_AUTH pairs

    def accepts(self, password: str) -> bool:
        data = password.encode("utf-8")
        if self.plain:
            return hmac.compare_digest(data, self.plain.encode("utf-8"))
        if not self.password_hash or not data or len(data) > _MAX_PASSWORD_BYTES:
            return False
        try:
            return bcrypt.checkpw(data, self.password_hash.encode("ascii"))
        except ValueError:
            return False  # a damaged hash never logs in


class _UsersFile:
    """The users file, re-read when it changes on disk (a ``stat`` per look-up).

    A file that becomes unreadable or invalid lets nobody in from it (fail closed)
    until it is fixed; the error is logged once per change.
    """

    def __init__(self, path: Path, accounts: Mapping[str, _Account], extra: Sequence[_Account]):
        self.path = path
        self._extra = tuple(extra)
        self._lock = threading.Lock()
        self._stamp = _stamp(path)
        self._accounts: Mapping[str, _Account] = accounts

    def accounts(self) -> Mapping[str, _Account]:
        stamp = _stamp(self.path)
        if stamp == self._stamp:
            return self._accounts
        with self._lock:
            if stamp != self._stamp:
                self._accounts = self._reload()
                self._stamp = stamp
            return self._accounts

    def _reload(self) -> Mapping[str, _Account]:
        try:
            accounts = {
                name: _account(name, e, path=self.path) for name, e in _read(self.path).items()
            }
        except ConfigError as exc:
            logger.error("%s; nobody logs in from that file until it is fixed", exc)
            accounts = {}
        for extra in self._extra:
            accounts.setdefault(extra.user.name, extra)
        logger.info("re-read the users file %s: %d users", self.path, len(accounts))
        return accounts


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_ino, info.st_mtime_ns, info.st_size)


@dataclass(frozen=True, slots=True)
class Directory:
    """The users who may log in, and the proxies whose identity headers are trusted.

    Built from a users file (`load_directory`), it follows that file: a user
    removed or a group taken away counts from the next request of every session.
    """

    accounts: Mapping[str, _Account] = field(default_factory=dict)
    trusted_proxies: frozenset[str] = frozenset()
    live: _UsersFile | None = None

    def _current(self) -> Mapping[str, _Account]:
        return self.live.accounts() if self.live is not None else self.accounts

    @property
    def has_logins(self) -> bool:
        """Return whether the UI must ask for a login (the proxy mode asks nothing)."""
        return bool(self.accounts) or (self.live is not None and bool(self._current()))

    @property
    def path(self) -> Path | None:
        """Return the users file followed, if any."""
        return self.live.path if self.live is not None else None

    @property
    def follows_file(self) -> bool:
        """Return whether the users come from a users file (``ASSISTANT_USERS``)."""
        return self.live is not None

    def authenticate(self, name: str, password: str) -> bool:
        """Return whether ``name`` logs in with ``password`` (Gradio's ``auth`` callable)."""
        account = self._current().get(name)
        return account is not None and account.accepts(password)

    def known(self, name: str) -> bool:
        """Return whether ``name`` is a user of the file or of ``ASSISTANT_AUTH`` now."""
        return name in self._current()

    def user(self, name: str | None) -> User:
        """Return the logged-in user ``name`` as the file has them now (ANONYMOUS if unknown)."""
        account = self._current().get(name or "")
        return account.user if account else ANONYMOUS

    def trusts(self, client: str | None) -> bool:
        """Return whether the socket peer ``client`` is a configured proxy."""
        return client is not None and peer_address(client) in self.trusted_proxies

    def resolve(
        self,
        *,
        login: str | None,
        client: str | None,
        headers: Mapping[str, str] | Sequence[tuple[str, str]],
    ) -> User:
        """Return who sends a request: the proxy's headers, else the login, else ANONYMOUS.

        Args:
            login: The user name of the request's login session, if any.
            client: The socket peer of the connection (never a forwarded address).
            headers: The request headers (names in any case); give every header
                line, repeated ones too (a mapping hides a second identity header).
        """
        if self.trusts(client):
            proxied = proxy_user(headers)
            if proxied is not None:
                return proxied
        return self.user(login)


def proxy_user(headers: Mapping[str, str] | Sequence[tuple[str, str]]) -> User | None:
    """Return the user a trusted proxy names, or None when it names none.

    A header sent more than once (or a user name holding a comma) names nobody:
    a proxy that appends to a client's header instead of replacing it must not
    let the client choose. Groups are lower-cased; invalid names are dropped.
    """
    items = headers.items() if isinstance(headers, Mapping) else headers
    values: dict[str, list[str]] = {}
    for key, value in items:
        values.setdefault(key.lower(), []).append(value)
    names = values.get(USER_HEADER, [])
    groups_values = values.get(GROUPS_HEADER, [])
    if len(names) != 1 or len(groups_values) > 1:
        return None
    name = names[0].strip()
    if not _NAME.fullmatch(name):
        return None
    raw = groups_values[0] if groups_values else ""
    groups = (g.strip().lower() for g in raw.split(","))
    return User(name=name, groups=frozenset(g for g in groups if valid_group(g)))


def load_directory(
    path: Path | None,
    *,
    auth_pairs: Sequence[tuple[str, str]] = (),
    trusted_proxies: Sequence[str] = (),
) -> Directory:
    """Read the users file (if any) and add the ``ASSISTANT_AUTH`` pairs.

    Raises:
        ConfigError: The file cannot be read or parsed, or names a user twice.
    """
    accounts: dict[str, _Account] = {}
    if path is not None:
        for name, entry in _read(path).items():
            accounts[name] = _account(name, entry, path=path)
    extra = []
    for name, password in auth_pairs:
        if name in accounts:
            raise ConfigError(f"ASSISTANT_AUTH: user {name!r} is also in {path}")
        extra.append(_Account(User(name=name), plain=password))
    accounts.update((a.user.name, a) for a in extra)
    proxies = frozenset(peer_address(p) for p in trusted_proxies)
    live = _UsersFile(path, accounts, extra) if path is not None else None
    return Directory(accounts, proxies, live)


def _read(path: Path) -> dict[str, object]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"ASSISTANT_USERS: cannot read {path}: {exc}") from exc
    users = data.get("users", {})
    if not isinstance(users, dict):
        raise ConfigError(f"ASSISTANT_USERS: {path}: [users] must be a table")
    return users


def _account(name: str, entry: object, *, path: Path) -> _Account:
    where = f"ASSISTANT_USERS: {path}: user {name!r}"
    if not _NAME.fullmatch(name) or not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a [users.NAME] table with a valid name")
    password, groups = entry.get("password", ""), entry.get("groups", [])
    if not isinstance(password, str) or not password.startswith("$2"):
        raise ConfigError(f"{where}: 'password' must be a bcrypt hash ($2b$...)")
    if not isinstance(groups, list) or not all(
        isinstance(g, str) and valid_group(g) for g in groups
    ):
        raise ConfigError(f"{where}: 'groups' must be a list of group names")
    return _Account(User(name=name, groups=frozenset(groups)), password_hash=password)


def add_user(path: Path, name: str, password: str, groups: Sequence[str]) -> None:
    """Add or replace ``name`` in the users file, with a new hash of ``password``.

    The file is rewritten whole (other users kept) and replaced atomically,
    readable by its owner only.

    Raises:
        ConfigError: A bad name, group or password, or an unreadable file.
    """
    if not _NAME.fullmatch(name):
        raise ConfigError(f"{name!r} is not a valid user name (letters, digits, _.@+-)")
    wanted = sorted({g.strip().lower() for g in groups})
    bad = [g for g in wanted if not valid_group(g)]
    if bad:
        raise ConfigError(f"{bad[0]!r} is not a valid group name (lower case, digits, _.@+-)")
    entries = {n: e for n, e in _read(path).items() if isinstance(e, dict)}
    entries[name] = {"password": hash_password(password), "groups": wanted}
    _write(path, entries)


def _write(path: Path, entries: Mapping[str, Mapping[str, object]]) -> None:
    """Write the users table as TOML (JSON strings are valid TOML basic strings)."""
    lines = ["# Users of the policy assistant: python -m assistant users add NAME --group G", ""]
    for name in sorted(entries):
        entry = entries[name]
        raw = entry.get("groups", [])
        groups = [g for g in raw if isinstance(g, str)] if isinstance(raw, list) else []
        lines += [
            f"[users.{json.dumps(name)}]",
            f"password = {json.dumps(str(entry.get('password', '')))}",
            f"groups = [{', '.join(json.dumps(g) for g in groups)}]",
            "",
        ]
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write("\n".join(lines))
    os.replace(tmp, path)
