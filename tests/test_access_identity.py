"""Identity: the trusted-proxy setting, proxy headers and the users file (issue 27).

D1's socket-peer rule is checked end to end in tests/web; here are the pieces it
rests on: `ASSISTANT_TRUSTED_PROXIES` holds addresses only (D22), a proxy's
headers are read strictly, and a users file is followed while a server runs (D3).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.config import Settings
from assistant.errors import ConfigError
from assistant.types import ANONYMOUS, User
from assistant.users import add_user, load_directory, proxy_user

PROXY = "10.9.9.9"


@pytest.mark.parametrize(
    "value",
    ["10.0.0.0/8", "127.0.0.0/8", "localhost", "::ffff:127.0.0.1", "garbage!!", "10.9.9.9:8080"],
)
def test_trusted_proxies_must_be_addresses(value: str) -> None:
    """D22: a value that can never equal a socket peer is refused, naming setting and value."""
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"ASSISTANT_TRUSTED_PROXIES": f"127.0.0.1, {value}"})
    assert "ASSISTANT_TRUSTED_PROXIES" in str(caught.value)
    assert repr(value) in str(caught.value)


def test_good_proxy_addresses_pass() -> None:
    settings = Settings.from_env({"ASSISTANT_TRUSTED_PROXIES": " 127.0.0.1 , ::1,10.9.9.9"})
    assert settings.ui.trusted_proxies == ("127.0.0.1", "::1", "10.9.9.9")


def _headers(**extra: str) -> dict[str, str]:
    return {"X-Forwarded-User": "ann", "X-Forwarded-Groups": "hr", **extra}


def test_only_the_socket_peer_decides_trust() -> None:
    directory = load_directory(None, trusted_proxies=[PROXY, "::1"])
    assert directory.resolve(login=None, client=PROXY, headers=_headers()).groups == {"hr"}
    # An IPv4-mapped peer of a dual-stack socket is the same proxy.
    assert directory.resolve(login=None, client="::ffff:10.9.9.9", headers=_headers()).name == "ann"
    assert directory.resolve(login=None, client="0:0:0:0:0:0:0:1", headers=_headers()).name == "ann"
    spoof = _headers(**{"X-Forwarded-For": PROXY, "X-Real-IP": PROXY, "Forwarded": f"for={PROXY}"})
    assert directory.resolve(login=None, client="127.0.0.1", headers=spoof) == ANONYMOUS


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        # Header names in any case.
        (
            [("x-FORWARDED-user", "ann"), ("X-Forwarded-GROUPS", "HR, Managers")],
            User("ann", frozenset({"hr", "managers"})),
        ),
        # Twice: a proxy that appends instead of replacing must not let the client choose.
        ([("X-Forwarded-User", "ann"), ("X-Forwarded-User", "admin")], None),
        (
            [
                ("X-Forwarded-User", "ann"),
                ("X-Forwarded-Groups", "staff"),
                ("X-Forwarded-Groups", "admin"),
            ],
            None,
        ),
        # A comma in the user name is a joined list, not a name.
        ([("X-Forwarded-User", "ann, admin")], None),
        ([("X-Forwarded-User", "ann\r\nX-Forwarded-Groups: admin")], None),
        ([("X-Forwarded-User", "   ")], None),
        # Look-alike groups are not groups: Cyrillic a, full-width letters, a dotless i.
        (
            [("X-Forwarded-User", "ann"), ("X-Forwarded-Groups", "\u0430dmin,\uff41dmin,\u0131t")],
            User("ann"),
        ),
        # Commas, blanks and case in the groups.
        (
            [("X-Forwarded-User", "ann"), ("X-Forwarded-Groups", ",, ADMIN ,,hr,")],
            User("ann", frozenset({"admin", "hr"})),
        ),
    ],
)
def test_proxy_headers_are_read_strictly(
    headers: list[tuple[str, str]], expected: User | None
) -> None:
    assert proxy_user(headers) == expected


def test_many_groups_from_a_proxy_are_all_kept() -> None:
    groups = ",".join(f"g{n}" for n in range(500))
    user = proxy_user([("X-Forwarded-User", "ann"), ("X-Forwarded-Groups", groups)])
    assert user is not None
    assert len(user.groups) == 500
    assert not user.is_admin


def test_a_running_directory_follows_the_users_file(tmp_path: Path) -> None:
    """D3: a deleted user no longer logs in; a demoted user loses the group at once."""
    path = tmp_path / "users.toml"
    add_user(path, "ann", "pw-ann-123", ["hr"])
    add_user(path, "bob", "pw-bob-123", [])
    directory = load_directory(path)
    assert directory.authenticate("bob", "pw-bob-123")
    assert directory.user("ann").groups == {"hr"}
    add_user(path, "ann", "pw-ann-123", [])
    path.write_text(path.read_text().split('[users."bob"]')[0], "utf-8")
    assert not directory.authenticate("bob", "pw-bob-123")
    assert directory.user("bob") == ANONYMOUS  # a session still open is nobody now
    assert directory.user("ann") == User("ann")
    assert directory.resolve(login="ann", client="127.0.0.1", headers={}) == User("ann")


def test_a_users_file_broken_while_running_lets_nobody_in(tmp_path: Path) -> None:
    path = tmp_path / "users.toml"
    add_user(path, "ann", "pw-ann-123", ["hr"])
    directory = load_directory(path, auth_pairs=[("carol", "pw-carol")])
    path.write_text('[users."ann"]\npassword = "plain"\ngroups = ["hr"]\n', "utf-8")
    assert not directory.authenticate("ann", "pw-ann-123")
    assert directory.user("ann") == ANONYMOUS
    assert directory.authenticate("carol", "pw-carol")  # ASSISTANT_AUTH pairs stay
