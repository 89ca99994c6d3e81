"""The gaps report: what staff asked that the documents did not answer, and what they disliked.

`build_report` groups questions by topic: each question is embedded with the
index's embedder, then clustered by cosine similarity (a leader pass that puts
each question with the closest group centroid above ``threshold`` + 0.2, so
only near-duplicates, then average-linkage merging of the groups while their
average pairwise cosine stays above ``threshold``). A
group is labelled by its most frequent content words (`assistant.words`).
Rendering is plain text or one self-contained HTML page; the chart is a PNG
made by the caller (the command line owns matplotlib).
"""

from __future__ import annotations

import base64
import html
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from assistant.protocols import Embedder
from assistant.types import AuditRecord, Feedback
from assistant.words import STOPWORDS, WORD, content_words

__all__ = ["DEFAULT_THRESHOLD", "GapsReport", "Topic", "build_report", "report_html", "report_text"]

DEFAULT_THRESHOLD = 0.55
MAX_QUESTIONS = 5000  # the newest ones; a month of a busy chat
EXAMPLES = 3
LABEL_WORDS = 3
LEADER_MARGIN = 0.2

Row = tuple[AuditRecord, Feedback | None]
# Words every kind of question uses; a topic is named by what it is about.
_GENERIC_TEXT = """get gets got getting take takes took tell give gives know need needs
    want wants many
    much long someone something anyone anything everyone one ever still really like please
    happen happens tried try use used make made say says said go goes put"""
_GENERIC = frozenset(_GENERIC_TEXT.split())


@dataclass(frozen=True, slots=True)
class Topic:
    """A group of similar questions, its size, a few examples and the documents it cited."""

    label: str
    count: int
    examples: tuple[str, ...]
    documents: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Disliked:
    """A thumbs-down answer with the user's reason and correction."""

    time: str
    question: str
    reason: str
    correction: str


@dataclass(frozen=True, slots=True)
class GapsReport:
    """Everything the report shows, for one period of the audit log."""

    since: str
    until: str
    asked: int
    unanswered: int
    per_day: tuple[tuple[str, int, int], ...]  # (date, answered, unanswered)
    gaps: tuple[Topic, ...]
    topics: tuple[Topic, ...]
    disliked: tuple[Disliked, ...]
    never_cited: tuple[tuple[str, str], ...]  # (source, title)


def is_unanswered(record: AuditRecord) -> bool:
    """Return whether the documents did not answer ``record`` (no match, or not covered)."""
    return record.no_match or record.not_covered


def build_report(
    rows: Sequence[Row],
    *,
    embedder: Embedder | None,
    documents: Mapping[str, str],
    since: str = "",
    threshold: float = DEFAULT_THRESHOLD,
) -> GapsReport:
    """Build the report of ``rows`` (oldest first).

    Args:
        rows: Audit records with their feedback.
        embedder: Embeds questions for grouping; None groups identical questions only.
        documents: ``source -> title`` of every indexed document (for "never cited").
        since: The first day covered ("" for the whole log).
        threshold: Cosine similarity above which two questions share a topic.
    """
    records = [r for r, _ in rows][-MAX_QUESTIONS:]
    unanswered = [r for r in records if is_unanswered(r)]
    answered = [r for r in records if not is_unanswered(r)]
    cited = Counter(s.source for r in answered for s in r.sources if s.cited)
    titles = dict(documents)
    titles.update({s.source: s.title for r in records for s in r.sources if s.title})
    common = common_words([r.question for r in records])
    return GapsReport(
        since=since or (records[0].time[:10] if records else ""),
        until=records[-1].time[:10] if records else "",
        asked=len(records),
        unanswered=len(unanswered),
        per_day=_per_day(records),
        gaps=tuple(_topics(unanswered, embedder, threshold, titles=None, common=common)),
        topics=tuple(_topics(answered, embedder, threshold, titles=titles, common=common)),
        disliked=tuple(
            Disliked(f.time, r.question, f.reason, f.correction)
            for r, f in rows
            if f is not None and f.rating == "down"
        ),
        never_cited=tuple(
            (source, title) for source, title in sorted(documents.items()) if source not in cited
        ),
    )


def _per_day(records: Iterable[AuditRecord]) -> tuple[tuple[str, int, int], ...]:
    days: dict[str, list[int]] = {}
    for record in records:
        counts = days.setdefault(record.time[:10], [0, 0])
        counts[1 if is_unanswered(record) else 0] += 1
    return tuple((day, a, u) for day, (a, u) in sorted(days.items()))


def _topics(
    records: Sequence[AuditRecord],
    embedder: Embedder | None,
    threshold: float,
    *,
    titles: Mapping[str, str] | None,
    common: frozenset[str] = frozenset(),
) -> list[Topic]:
    if not records:
        return []
    questions = [r.question for r in records]
    if embedder is None:
        groups = _identical(questions)
    else:
        groups = cluster(embedder.embed(questions), threshold=threshold)
    topics = []
    for members in groups:
        texts = [questions[i] for i in members]
        documents: Counter[str] = Counter()
        if titles is not None:
            for i in members:
                for source in {s.source for s in records[i].sources if s.cited}:
                    documents[titles.get(source) or source] += 1
        topics.append(
            Topic(
                label=label(texts, common=common),
                count=len(members),
                examples=tuple(dict.fromkeys(texts))[:EXAMPLES],
                documents=tuple(documents.most_common(3)),
            )
        )
    return sorted(topics, key=lambda t: (-t.count, t.label))


def _identical(questions: Sequence[str]) -> list[list[int]]:
    groups: dict[str, list[int]] = {}
    for i, question in enumerate(questions):
        groups.setdefault(" ".join(sorted(content_words(question))), []).append(i)
    return list(groups.values())


def cluster(vectors: npt.NDArray[np.float32], *, threshold: float) -> list[list[int]]:
    """Group the rows of ``vectors`` (unit length) whose cosine similarity exceeds ``threshold``.

    Returns the groups as lists of row numbers, in order of their first row.
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1, norms)
    groups: list[list[int]] = []
    sums: list[npt.NDArray[np.float32]] = []
    # The leader pass only gathers near-duplicates (a centroid drifts as it grows, and a
    # loose bar chains topics into one blob); average linkage decides the topics.
    tight = min(0.95, threshold + LEADER_MARGIN)
    for i, vector in enumerate(unit):
        if sums:
            centroids = np.stack([s / np.linalg.norm(s) for s in sums])
            scores = centroids @ vector
            best = int(np.argmax(scores))
            if scores[best] >= tight:
                groups[best].append(i)
                sums[best] = sums[best] + vector
                continue
        groups.append([i])
        sums.append(vector.copy())
    return _merge(groups, sums, threshold=threshold)


def _merge(
    groups: list[list[int]],
    sums: list[npt.NDArray[np.float32]],
    *,
    threshold: float,
) -> list[list[int]]:
    """Merge the two groups with the highest average similarity while it is above ``threshold``."""
    while len(groups) > 1:
        means = np.stack([s / len(g) for s, g in zip(sums, groups, strict=True)])
        similarity = means @ means.T  # average pairwise cosine between groups
        np.fill_diagonal(similarity, -np.inf)
        row, col = np.unravel_index(int(np.argmax(similarity)), similarity.shape)
        if similarity[row, col] < threshold:
            break
        a, b = sorted((int(row), int(col)))
        groups[a] = sorted(groups[a] + groups[b])
        sums[a] = sums[a] + sums[b]
        del groups[b], sums[b]
    return sorted(groups, key=lambda g: g[0])


def common_words(questions: Sequence[str]) -> frozenset[str]:
    """Return the content words (stems) in more than half of ``questions`` (of at least 10).

    On a corpus about one product every question names it ("github"): such a word
    names no topic.
    """
    if len(questions) < 10:
        return frozenset()
    counts = Counter(stem for q in questions for stem in content_words(q))
    return frozenset(stem for stem, n in counts.items() if n > len(questions) / 2)


def label(questions: Sequence[str], *, common: frozenset[str] = frozenset()) -> str:
    """Return the most frequent content words of ``questions``, as they are usually written.

    Words in ``common`` (stems) are left out unless nothing else is left.
    """
    stems: Counter[str] = Counter()
    spellings: dict[str, Counter[str]] = {}
    for question in questions:
        seen = set()
        for word in WORD.findall(question.lower()):
            if word in STOPWORDS or word in _GENERIC or word.isdigit() or len(word) < 3:
                continue
            stem = next(iter(content_words(word)), word)
            spellings.setdefault(stem, Counter())[word] += 1
            if stem not in seen:  # a word counts once per question
                stems[stem] += 1
                seen.add(stem)
    ranked = [stem for stem, _ in stems.most_common()]
    top = ([stem for stem in ranked if stem not in common] or ranked)[:LABEL_WORDS]
    return ", ".join(spellings[stem].most_common(1)[0][0] for stem in top) or "(no words)"


def report_text(report: GapsReport) -> str:
    """Return the report as plain text."""
    answered = report.asked - report.unanswered
    lines = [
        f"Gaps report {report.since or '-'} to {report.until or '-'}",
        f"Questions: {report.asked} ({answered} answered, {report.unanswered} not answered)",
        "",
        "Not answered by the documents, by topic:",
    ]
    lines += _topic_lines(report.gaps) or ["  (none)"]
    lines += ["", "Answers rated down:"]
    lines += [
        f"  {d.time[:10]}  {d.question}"
        + (f"\n      reason: {d.reason}" if d.reason else "")
        + (f"\n      right answer: {d.correction}" if d.correction else "")
        for d in report.disliked
    ] or ["  (none)"]
    lines += ["", "Most asked topics and the documents they cite:"]
    lines += _topic_lines(report.topics[:10], documents=True) or ["  (none)"]
    lines += ["", "Documents never cited:"]
    lines += [f"  {title} ({source})" for source, title in report.never_cited] or ["  (none)"]
    return "\n".join(lines)


def _topic_lines(topics: Sequence[Topic], *, documents: bool = False) -> list[str]:
    lines = []
    for topic in topics:
        lines.append(f"  {topic.count:>4}  {topic.label}")
        lines += [f"        - {example}" for example in topic.examples]
        if documents and topic.documents:
            cited = "; ".join(f"{title} ({n})" for title, n in topic.documents)
            lines.append(f"        cites: {cited}")
    return lines


def report_html(report: GapsReport, *, chart_png: bytes | None = None) -> str:
    """Return the report as one HTML page (the chart embedded as a base64 PNG)."""
    e = html.escape
    answered = report.asked - report.unanswered
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Gaps report {e(report.since)} to {e(report.until)}</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;"
        "line-height:1.45}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
        "padding:.25rem .5rem;text-align:left;vertical-align:top}.n{text-align:right}</style>",
        "</head><body>",
        f"<h1>Gaps report {e(report.since or '-')} to {e(report.until or '-')}</h1>",
        f"<p>{report.asked} questions: {answered} answered, "
        f"{report.unanswered} not answered by the documents.</p>",
    ]
    if chart_png:
        data = base64.b64encode(chart_png).decode("ascii")
        parts.append(
            f'<img alt="Questions per day, answered and not answered" '
            f'src="data:image/png;base64,{data}">'
        )
    parts += ["<h2>Not answered by the documents, by topic</h2>", _topic_table(report.gaps)]
    parts.append("<h2>Answers rated down</h2>")
    if report.disliked:
        rows = "".join(
            f"<tr><td>{e(d.time[:10])}</td><td>{e(d.question)}</td><td>{e(d.reason)}</td>"
            f"<td>{e(d.correction)}</td></tr>"
            for d in report.disliked
        )
        parts.append(
            "<table><tr><th>date</th><th>question</th><th>reason</th>"
            f"<th>the right answer is</th></tr>{rows}</table>"
        )
    else:
        parts.append("<p>None.</p>")
    parts += [
        "<h2>Most asked topics and the documents they cite</h2>",
        _topic_table(report.topics[:10], documents=True),
        "<h2>Documents never cited</h2>",
    ]
    if report.never_cited:
        items = "".join(f"<li>{e(t)} ({e(s)})</li>" for s, t in report.never_cited)
        parts.append(f"<ul>{items}</ul>")
    else:
        parts.append("<p>None.</p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _topic_table(topics: Sequence[Topic], *, documents: bool = False) -> str:
    if not topics:
        return "<p>None.</p>"
    e = html.escape
    head = "<tr><th>questions</th><th>topic</th><th>examples</th>"
    head += "<th>documents cited</th></tr>" if documents else "</tr>"
    rows = []
    for topic in topics:
        examples = "<br>".join(e(x) for x in topic.examples)
        row = f'<tr><td class="n">{topic.count}</td><td>{e(topic.label)}</td><td>{examples}</td>'
        if documents:
            row += "<td>" + "<br>".join(f"{e(t)} ({n})" for t, n in topic.documents) + "</td>"
        rows.append(row + "</tr>")
    return f"<table>{head}{''.join(rows)}</table>"
