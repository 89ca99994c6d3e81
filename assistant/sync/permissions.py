"""An item's SharePoint permissions as a document's audience (docs/sharepoint.md).

Users are named by sign-in name (lower-cased), groups by display name made a
group name (``Finance Team`` -> ``finance-team``). A link for "people in the
organisation" makes the item readable by every signed-in user (`SIGNED_IN`);
an anonymous link makes it public only when the configuration says so. An item
no grant opens to anyone is left to administrators: never to everyone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from assistant.sync.graph import Grant
from assistant.types import ADMIN_GROUP, SIGNED_IN

__all__ = ["audience_of", "group_name"]

_NOT_GROUP = re.compile(r"[^a-z0-9_.@+-]+")


def group_name(display_name: str) -> str:
    """Return the group name a SharePoint or Entra group's display name becomes ("" if none)."""
    return _NOT_GROUP.sub("-", display_name.strip().lower()).strip("-._@+")[:64]


def audience_of(grants: Iterable[Grant], *, anonymous_public: bool) -> tuple[str, ...]:
    """Return the audience the grants make: sorted names, ``()`` only for a public item."""
    names: set[str] = set()
    for grant in grants:
        if not grant.roles:
            continue
        if grant.link_scope == "anonymous" and anonymous_public:
            return ()
        if grant.link_scope == "organization":
            names.add(SIGNED_IN)
        users = (user.strip().lower() for user in grant.users)
        # A sign-in name that is no valid audience name is dropped, not the whole drive.
        names.update(u for u in users if "@" in u and not _NOT_GROUP.search(u) and u[0].isalnum())
        names.update(group_name(group) for group in grant.groups)
    names.discard("")
    return tuple(sorted(names)) or (ADMIN_GROUP,)
