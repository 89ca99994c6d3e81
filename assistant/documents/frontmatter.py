"""YAML front matter: split it off a Markdown text and turn it into `DocMeta` fields.

Only ``yaml.safe_load`` is used. Front matter larger than `MAX_FRONT_MATTER_CHARS`
or containing YAML anchors/aliases (the "billion laughs" pattern) is refused.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass

import yaml

from assistant.documents.access import parse_groups
from assistant.errors import DocumentError
from assistant.types import DocMeta

__all__ = ["MAX_FRONT_MATTER_CHARS", "FrontMatter", "parse_front_matter", "split_front_matter"]

MAX_FRONT_MATTER_CHARS = 64 * 1024

_DELIMITER = "---"
_KEYS = {
    "effective_date": ("effective_date", "effective", "date"),
    "updated_date": ("updated_date", "updated", "last_updated"),
}


@dataclass(frozen=True, slots=True)
class FrontMatter:
    """A split-off front matter block.

    Attributes:
        yaml_text: The YAML between the delimiters.
        body_start: Char offset where the Markdown body begins.
        body_line: 0-based line number where the Markdown body begins.
    """

    yaml_text: str
    body_start: int
    body_line: int


def split_front_matter(text: str) -> FrontMatter | None:
    """Find a leading ``---`` ... ``---`` block; return None when there is none.

    An opening delimiter without a closing one is not front matter (the text
    is then plain Markdown, where ``---`` is a rule).
    """
    first_end = text.find("\n")
    if first_end < 0 or text[:first_end].rstrip() != _DELIMITER:
        return None
    pos, line = first_end + 1, 1
    while pos <= len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        if text[pos:end].rstrip() in (_DELIMITER, "..."):
            return FrontMatter(text[first_end + 1 : pos], min(end + 1, len(text)), line + 1)
        if end == len(text):
            return None
        pos, line = end + 1, line + 1
    return None


def parse_front_matter(front: FrontMatter, *, source: str) -> DocMeta:
    """Parse front matter YAML into `DocMeta` (``title`` is empty when absent).

    Args:
        front: The block found by `split_front_matter`.
        source: The document's name, for errors.

    Returns:
        The metadata; unknown keys are ignored.

    Raises:
        DocumentError: Invalid or oversized YAML, aliases, a non-mapping, or a bad date.
    """
    data = _load_yaml(front.yaml_text, source=source)
    title = _text(data.get("title"))
    dates = {name: _date(data, keys, source=source) for name, keys in _KEYS.items()}
    supersedes = data.get("supersedes")
    if isinstance(supersedes, list):
        supersedes = ", ".join(_text(s) for s in supersedes)
    return DocMeta(
        title=title,
        effective_date=dates["effective_date"],
        updated_date=dates["updated_date"],
        version=_text(data.get("version")),
        owner=_text(data.get("owner")),
        tags=_tags(data.get("tags")),
        url=_text(data.get("url")),
        supersedes=_text(supersedes),
        audience=_audience(data, front.yaml_text, source=source),
    )


_AUDIENCE_KEYS = ("audience", "access")


def _audience(data: dict[object, object], yaml_text: str, *, source: str) -> tuple[str, ...] | None:
    """Return the front matter's audience, None when it names none (the access file decides)."""
    keys = [key for key in _AUDIENCE_KEYS if key in data]
    near = [k for k in data if isinstance(k, str) and _folded(k) in _AUDIENCE_KEYS]
    odd = [k for k in near if k not in _AUDIENCE_KEYS]
    if odd:
        # 'Audience:' or 'ACCESS :' would otherwise be ignored and the document made public.
        line = _line_of(yaml_text, re.escape(odd[0]))
        reason = f"front matter line {line}: write the key {odd[0]!r} as 'audience' or 'access'"
        raise DocumentError(source, reason)
    if not keys:
        return None
    line = _line_of(yaml_text, keys[0])
    if len(keys) > 1:
        reason = f"front matter line {line}: give 'audience' or 'access', not both"
        raise DocumentError(source, reason)
    return parse_groups(data[keys[0]], where=f"front matter line {line}", source=source)


# Latin look-alikes from Cyrillic and Greek that NFKC leaves as they are.
_LOOKALIKES = str.maketrans("асеорхуіѕԁеαοτνυϲ", "aceopxyisdeaotvuc")


def _folded(key: str) -> str:
    """Return ``key`` as it reads: NFKC, case-folded, look-alike letters as Latin."""
    return unicodedata.normalize("NFKC", key).strip().casefold().translate(_LOOKALIKES)


def _line_of(yaml_text: str, key: str) -> int:
    """Return the file line of top-level ``key`` (+2: the opening delimiter is line 1)."""
    match = re.search(rf"^{key}\s*:", yaml_text, re.MULTILINE)
    return yaml_text.count("\n", 0, match.start()) + 2 if match else 1


def _load_yaml(yaml_text: str, *, source: str) -> dict[object, object]:
    if len(yaml_text) > MAX_FRONT_MATTER_CHARS:
        raise DocumentError(source, "front matter is larger than 64 KB")
    try:
        for token in yaml.scan(yaml_text, Loader=yaml.SafeLoader):
            if isinstance(token, yaml.AliasToken | yaml.AnchorToken):
                line = token.start_mark.line + 2
                raise DocumentError(
                    source, f"front matter line {line}: YAML anchors and aliases are not allowed"
                )
        data = yaml.safe_load(yaml_text)
    except yaml.YAMLError as exc:
        raise DocumentError(source, f"invalid YAML front matter: {_yaml_problem(exc)}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise DocumentError(source, f"front matter must be a mapping of keys, got a {kind}")
    return data


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is None:
        return str(problem)
    # +2: the opening delimiter is line 1 of the file and marks are 0-based.
    return f"line {mark.line + 2}: {problem}"


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, dt.date):
        return value.isoformat()[:10]
    return str(value).strip()


def _tags(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else str(value).split(",")
    tags = (_text(item).lower() for item in items)
    return tuple(dict.fromkeys(t for t in tags if t))


def _date(data: dict[object, object], keys: tuple[str, ...], *, source: str) -> str:
    key = next((k for k in keys if data.get(k) not in (None, "")), None)
    if key is None:
        return ""
    value = data[key]
    if isinstance(value, dt.date):
        return value.isoformat()[:10]
    raw = str(value).strip()
    try:
        return dt.date.fromisoformat(raw[:10].replace("/", "-")).isoformat()
    except ValueError as exc:
        raise DocumentError(
            source, f"front matter '{key}' is not a date (YYYY-MM-DD): {raw!r}"
        ) from exc
