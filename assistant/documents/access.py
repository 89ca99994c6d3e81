"""Who may read a document: audiences from front matter and from an access file.

A document's audience is a tuple of group names; ``()`` means everyone. It
comes, first match wins, from

1. its front matter: ``audience: [hr, managers]`` (or ``access:``; a list or a
   comma-separated string; ``everyone`` means no restriction);
2. the access file ``.access`` in the root folder given to the ingest (for a
   single file, its folder): one rule a line, ``PATTERN -> GROUP, GROUP``,
   ``#`` starts a comment, and the *last* matching rule wins (as in
   ``.gitignore``). Patterns match the source path relative to that folder:
   ``*`` and ``?`` stay inside one folder, ``**`` crosses folders
   (``hr/** -> hr``);
3. the index's default (``ASSISTANT_DEFAULT_AUDIENCE``; empty: everyone).

Everything here fails closed: a rule or a group name that cannot be parsed
raises `AccessRuleError` naming the file and line, and the ingest then stores
nothing for the documents it governs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from assistant.errors import DocumentError

__all__ = [
    "ACCESS_FILE",
    "EVERYONE",
    "AccessRuleError",
    "AccessRules",
    "audience_now",
    "parse_groups",
    "read_rules",
    "unapplied_access_file",
]

ACCESS_FILE = ".access"
EVERYONE = "everyone"
MAX_ACCESS_FILE_BYTES = 1024 * 1024
_GROUP = re.compile(r"[a-z0-9][a-z0-9_.@+-]{0,63}")
_ARROW = "->"


class AccessRuleError(DocumentError):
    """An audience that cannot be parsed: the documents it governs are not ingested."""


def parse_groups(value: object, *, where: str, source: str) -> tuple[str, ...]:
    """Return the audience named by ``value`` (a list or a comma-separated string).

    Args:
        value: From front matter or the right side of a rule.
        where: Names the place in errors, e.g. ``"front matter line 3"``.
        source: The document or file the error is reported for.

    Returns:
        Sorted distinct lower-cased group names; ``()`` for ``everyone``.

    Raises:
        AccessRuleError: Not a list of valid group names, or empty.
    """
    if isinstance(value, str):
        items: Sequence[object] = value.split(",")
    elif isinstance(value, list | tuple):
        items = value
    else:
        raise AccessRuleError(source, f"{where}: an audience is a list of groups, got {value!r}")
    names = [str(item).strip().lower() for item in items if isinstance(item, str | int)]
    if len(names) != len(items) or not names or not all(names):
        raise AccessRuleError(source, f"{where}: an audience is a list of groups, got {value!r}")
    bad = [n for n in names if n != EVERYONE and not _GROUP.fullmatch(n)]
    if bad:
        raise AccessRuleError(source, f"{where}: {bad[0]!r} is not a valid group name")
    if EVERYONE in names:
        if len(names) > 1:
            raise AccessRuleError(source, f"{where}: 'everyone' cannot be combined with groups")
        return ()
    return tuple(sorted(set(names)))


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str]
    audience: tuple[str, ...]
    line: int = 0
    text: str = ""


@dataclass(frozen=True, slots=True)
class AccessRules:
    """The rules of one access file (none: no file); ``name`` is that file."""

    rules: tuple[_Rule, ...] = ()
    name: str = ""

    def unused(self, sources: Iterable[str]) -> list[str]:
        """Return a message for each rule that matches none of ``sources``.

        Such a rule protects nothing, and was almost always meant to (a typo, a
        folder that moved), so the ingest reports it.
        """
        listed = list(sources)
        return [
            f"access rules {self.name}: line {rule.line}: {rule.text!r} matches no document"
            for rule in self.rules
            if not any(rule.pattern.fullmatch(source) for source in listed)
        ]

    def audience_of(self, source: str) -> tuple[str, ...] | None:
        """Return the audience of the last rule matching ``source``, or None if none matches."""
        found: tuple[str, ...] | None = None
        for rule in self.rules:
            if rule.pattern.fullmatch(source):
                found = rule.audience
        return found


def read_rules(root: Path) -> AccessRules:
    """Read the access file that governs the documents under ``root``.

    Raises:
        AccessRuleError: The file cannot be read or a line cannot be parsed.
    """
    folder = root if root.is_dir() else root.parent
    path = folder / ACCESS_FILE
    if not path.is_file():
        return AccessRules()
    try:
        data = path.read_bytes()[: MAX_ACCESS_FILE_BYTES + 1]
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AccessRuleError(str(path), f"cannot read the access file: {exc}") from exc
    if len(data) > MAX_ACCESS_FILE_BYTES:
        raise AccessRuleError(str(path), "the access file is larger than 1 MB")
    return parse_rules(text, name=str(path))


def parse_rules(text: str, *, name: str) -> AccessRules:
    """Parse access-file ``text``; ``name`` is the file named in errors."""
    rules = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        pattern, arrow, groups = line.partition(_ARROW)
        where = f"line {number}"
        if not arrow or not pattern.strip() or _ARROW in groups:
            raise AccessRuleError(
                name, f"{where}: expected 'PATTERN -> GROUP, GROUP', got {raw.strip()!r}"
            )
        audience = parse_groups(groups, where=where, source=name)
        glob = _glob(pattern.strip(), where=where, name=name)
        rules.append(_Rule(glob, audience, number, line))
    return AccessRules(tuple(rules), name)


def audience_now(
    front_matter: tuple[str, ...] | None,
    *,
    root: Path,
    path: Path,
    source: str,
    default: tuple[str, ...] = (),
) -> tuple[str, ...]:
    """Return the audience the ingest would give ``path`` as it is on disk now.

    Front matter first, else the last matching rule of ``root``'s access file,
    else ``default`` — the ingest's order. The viewer checks the bytes it serves
    with this, since they may be newer than the indexed version.

    Raises:
        AccessRuleError: The access file cannot be parsed, or one that is not
            applied governs the file (fail closed: the caller shows nothing).
    """
    if front_matter is not None:
        return front_matter
    ignored = unapplied_access_file(root, path)
    if ignored is not None:
        raise AccessRuleError(str(ignored), "an access file that is not applied governs it")
    found = read_rules(root).audience_of(source)
    return found if found is not None else default


def unapplied_access_file(folder: Path, path: Path, *, single: bool = False) -> Path | None:
    """Return an access file that would govern ``path`` but is not read, or None.

    Only the access file of the folder given to the ingest (``folder``; for a single
    file, its folder) is read. One in a subfolder of it, or, for a file given alone
    (``single``), one in a folder above, would be silently ignored and the document
    made public: the ingest refuses such a document instead, naming that file.
    """
    nested = path.parent
    while nested != folder and folder in nested.parents:
        if (nested / ACCESS_FILE).is_file():
            return nested / ACCESS_FILE
        nested = nested.parent
    if not single:
        return None
    return next((p / ACCESS_FILE for p in folder.parents if (p / ACCESS_FILE).is_file()), None)


def _glob(pattern: str, *, where: str, name: str) -> re.Pattern[str]:
    """Translate a glob (``**`` crosses folders, ``*`` and ``?`` do not) to a regex.

    As in ``.gitignore``, a pattern naming a folder covers what is under it: one
    ending in ``/`` (``hr/``) and one without wildcards (``board``, ``hr/pay``)
    also match every path below it.
    """
    pattern = pattern.removeprefix("./")
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise AccessRuleError(name, f"{where}: patterns are relative paths, got {pattern!r}")
    folder = pattern.endswith("/") or not any(c in pattern for c in "*?")
    pattern = pattern.rstrip("/")
    if not pattern:
        raise AccessRuleError(name, f"{where}: an empty pattern matches nothing")
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    if folder:
        out.append("(?:/.*)?")
    return re.compile("".join(out), re.DOTALL)
