"""Who the command line searches as, ``users add`` and ``access check``.

Whoever runs the command line reads the index files directly, so they are an
administrator: ``search``, ``ask`` and ``eval`` see every document by default.
``--as NAME`` runs them as a user of the users file (``ASSISTANT_USERS``) or of
``ASSISTANT_AUTH`` instead, to see exactly what that user gets;
``access check NAME "question"`` is ``ask --as NAME --trace`` in one command.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from assistant.config import Settings
from assistant.errors import ConfigError
from assistant.protocols import Searcher
from assistant.session import searching_as
from assistant.types import ADMIN_GROUP, User
from assistant.users import add_user, load_directory

__all__ = ["LOCAL_OPERATOR", "bind", "cli_user", "run_users"]

LOCAL_OPERATOR = User(name="local", groups=frozenset({ADMIN_GROUP}))


def cli_user(name: str | None, settings: Settings) -> User:
    """Return the user ``--as NAME`` names, or the local operator (an administrator).

    Raises:
        ConfigError: No such user in ``ASSISTANT_USERS`` or ``ASSISTANT_AUTH``.
    """
    if name is None:
        return LOCAL_OPERATOR
    directory = load_directory(settings.ui.users_file, auth_pairs=settings.ui.auth)
    if name not in directory.accounts:
        where = settings.ui.users_file or "ASSISTANT_AUTH (ASSISTANT_USERS is not set)"
        raise ConfigError(f"--as: no user {name!r} in {where}")
    return directory.user(name)


def bind(factory: Callable[[Settings], Searcher], user: User) -> Callable[[Settings], Searcher]:
    """Return ``factory`` with each searcher it makes bound to ``user``."""
    return lambda settings: searching_as(factory(settings), user)


def add_users_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``users add`` to the command line."""
    users = commands.add_parser("users", help="manage the users file (ASSISTANT_USERS)")
    actions = users.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="add a user, or replace their password and groups")
    add.add_argument("name")
    add.add_argument("--group", action="append", default=[], help="a group (repeatable)")
    add.add_argument("--file", type=Path, help="the users file (default: env ASSISTANT_USERS)")
    add.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    add.add_argument("-v", "--verbose", action="count", default=0, help="more logging")


def run_users(args: argparse.Namespace, settings: Settings, *, stdin: TextIO, out: TextIO) -> int:
    """Run ``users add``: ask for the password (twice) unless ``--password-stdin``.

    Raises:
        ConfigError: No users file named, a bad name or group, or passwords that differ.
    """
    path = args.file or settings.ui.users_file
    if path is None:
        raise ConfigError("users add: give --file or set ASSISTANT_USERS")
    if args.password_stdin:
        password = stdin.readline().rstrip("\r\n")
    else:
        password = getpass.getpass(f"password for {args.name}: ", stream=sys.stderr)
        if getpass.getpass("again: ", stream=sys.stderr) != password:
            raise ConfigError("users add: the passwords differ")
    add_user(path, args.name, password, args.group)
    groups = ", ".join(sorted({g.lower() for g in args.group})) or "no group"
    print(f"{args.name} ({groups}) written to {path}", file=out)
    return 0
