"""API keys: random bearer tokens, stored only as SHA-256 hashes, each mapped to a user.

The keys file is JSON (``{"keys": [{"id", "sha256", "user", "groups", "created"}]}``),
written atomically with mode 0600. A key is 32 random bytes, so a plain SHA-256 is
enough: there is nothing to brute-force that a slow hash would protect. Servers
re-read the file when its modification time or size changes (a ``stat`` per
request, no polling thread), so ``keys add`` and ``keys remove`` take effect at once.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import secrets
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from assistant.config import Settings
from assistant.errors import ConfigError
from assistant.types import User
from assistant.users import Directory, load_directory, valid_group
from assistant.words import valid_unicode

__all__ = ["KEY_PREFIX", "KeyRecord", "KeyStore", "checked_groups", "hash_key", "open_key_store"]

logger = logging.getLogger(__name__)

KEY_PREFIX = "pa-"
_MAX_NAME = 100


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """One stored key: its public id, the hash of the secret and whom it stands for."""

    id: str
    sha256: str
    user: str
    groups: tuple[str, ...]
    created: str

    def to_user(self) -> User:
        """Return the `User` requests with this key run as."""
        return User(name=self.user, groups=frozenset(self.groups))


def open_key_store(settings: Settings) -> KeyStore:
    """Return the keys file of ``settings``, following ``ASSISTANT_USERS`` when it is set.

    Raises:
        ConfigError: The users file cannot be read.
    """
    directory = load_directory(settings.ui.users_file, auth_pairs=settings.ui.auth)
    return KeyStore(settings.api.keys_path(settings.store.path), directory)


def hash_key(key: str) -> str:
    """Return the hex SHA-256 of a presented key (what the file stores)."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


class KeyStore:
    """The keys file, read lazily and re-read when it changes on disk.

    Thread-safe for readers; writers (the ``keys`` command) replace the file atomically.
    """

    def __init__(self, path: Path, directory: Directory | None = None) -> None:
        self.path = path
        # With a users file, a key stands for its user as that file has them now.
        self.directory = directory if directory is not None and directory.follows_file else None
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._by_hash: dict[str, KeyRecord] = {}
        self.problem = ""

    def records(self) -> tuple[KeyRecord, ...]:
        """Return every stored key, oldest first.

        Raises:
            ConfigError: The file exists but is not a valid keys file.
        """
        return _read(self.path)

    def configured(self) -> bool:
        """Return whether at least one key exists (else the API refuses keyed calls)."""
        self._refresh()
        return bool(self._by_hash)

    def lookup(self, key: str) -> User | None:
        """Return the user of ``key``, or None when no stored key matches.

        With a users file (``ASSISTANT_USERS``), the key runs with its user's groups
        in that file now, and the key of a user who is not in it opens nothing.
        """
        self._refresh()
        record = self._by_hash.get(hash_key(key))
        if record is None:
            return None
        if self.directory is None:
            return record.to_user()
        if not self.directory.known(record.user):
            logger.warning(
                "key %s: user %r is not in the users file; refused", record.id, record.user
            )
            return None
        return self.directory.user(record.user)

    def _refresh(self) -> None:
        try:
            info = self.path.stat()
            stamp: tuple[int, int] | None = (info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            stamp = None
        if stamp == self._stamp and (stamp is not None or not self._by_hash):
            return
        with self._lock:
            try:
                records = _read(self.path) if stamp is not None else ()
                self.problem = ""
            except ConfigError as exc:
                # A broken file must not let anyone in, nor crash every request.
                logger.error("%s", exc)
                records, self.problem = (), str(exc)
            self._by_hash = {r.sha256: r for r in records}
            self._stamp = stamp

    def add(self, user: str, groups: tuple[str, ...] = ()) -> tuple[str, KeyRecord]:
        """Create a key for ``user``; return the secret (shown once) and its record.

        Raises:
            ConfigError: The name or a group is empty or unprintable, or the file is broken.
        """
        name = _checked_name(user, what="user")
        clean_groups = checked_groups(groups)
        if self.directory is not None and not self.directory.known(name):
            raise ConfigError(
                f"{name!r} is not in the users file {self.directory.path}: add the user "
                "first (python -m assistant users add); a key runs with that user's groups"
            )
        secret = KEY_PREFIX + secrets.token_urlsafe(32)
        digest = hash_key(secret)
        created = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        record = KeyRecord("key-" + digest[:12], digest, name, clean_groups, created)
        _write(self.path, (*_read(self.path), record))
        return secret, record

    def remove(self, key_id: str) -> bool:
        """Delete the key with this id; return whether one existed."""
        records = _read(self.path)
        kept = tuple(r for r in records if r.id != key_id)
        if len(kept) == len(records):
            return False
        _write(self.path, kept)
        return True


def checked_groups(groups: Iterable[str]) -> tuple[str, ...]:
    """Return ``groups`` lower-cased, split at commas, sorted and distinct.

    Raises:
        ConfigError: A name that is not a group name (as ``users add`` refuses it).
    """
    names = {part.strip().lower() for g in groups for part in valid_unicode(g).split(",")}
    names.discard("")
    bad = sorted(n for n in names if not valid_group(n))
    if bad:
        raise ConfigError(f"{bad[0]!r} is not a valid group name (lower case, digits, _.@+-)")
    return tuple(sorted(names))


def _checked_name(value: str, *, what: str) -> str:
    text = valid_unicode(value).strip()
    if not text or len(text) > _MAX_NAME or not text.isprintable():
        raise ConfigError(f"a {what} name must be 1-{_MAX_NAME} printable characters: {value!r}")
    return text


def _read(path: Path) -> tuple[KeyRecord, ...]:
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ()
    except OSError as exc:
        raise ConfigError(f"cannot read the API keys file {path}: {exc}") from exc
    try:
        data = json.loads(raw)
        return tuple(
            KeyRecord(
                id=str(item["id"]),
                sha256=str(item["sha256"]),
                user=str(item["user"]),
                groups=tuple(str(g) for g in item.get("groups", [])),
                created=str(item.get("created", "")),
            )
            for item in data["keys"]
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"the API keys file {path} is not valid: {exc!r}") from exc


def _write(path: Path, records: tuple[KeyRecord, ...]) -> None:
    data = {
        "keys": [
            {"id": r.id, "sha256": r.sha256, "user": r.user, "groups": list(r.groups)}
            | {"created": r.created}
            for r in records
        ]
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".api-keys-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:  # mkstemp makes it 0600
            json.dump(data, out, indent=1)
            out.write("\n")
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigError(f"cannot write the API keys file {path}: {exc}") from exc
