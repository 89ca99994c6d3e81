"""A model answer is cited claim by claim, whatever markers the model wrote (issue 35, item 1)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pytest

from assistant.answering.citations import check_answer, cited_numbers
from assistant.answering.claims import ClaimCiter, cite_stream, cite_text, strip_markers
from assistant.answering.grounding import NO_CITATION_WARNING, UNSUPPORTED_MARK
from assistant.types import Hit
from tests.answering.test_service import FakeSearcher, online
from tests.support.hit_factory import make_hit
from tests.support.openai_server import FakeOpenAIServer, Reply

LOAN = make_hit(
    1,
    "Emergency loans carry interest at 12% per annum on a reducing balance, up to KES 200,000.",
    source="loan-policy.md",
    heading_path=("Loan Policy", "Emergency Loans"),
    title="Loan Policy",
)
LEAVE = make_hit(
    2,
    "Staff get 21 days of annual leave each year, accrued monthly from the start date.",
    source="leave.md",
)
HOURS = make_hit(
    3,
    "Branches open Monday to Friday from 8:00 a.m. to 5:00 p.m.",
    source="service-charter.md",
    heading_path=("Service Charter", "Opening hours"),
    title="Service Charter",
)
COMPLAINTS = make_hit(
    4,
    "The Sacco resolves complaints within 15 working days of receiving them.",
    source="service-charter.md",
    heading_path=("Service Charter", "Complaints"),
    title="Service Charter",
)
SOURCES = (LOAN, LEAVE, HOURS, COMPLAINTS)


def cited(text: str, sources: Sequence[Hit] = SOURCES, **kwargs: object) -> str:
    return cite_text(text, ClaimCiter("What applies?", sources, **kwargs))  # type: ignore[arg-type]


def test_an_uncited_claim_gets_the_marker_of_the_source_that_states_it() -> None:
    text = "Staff get 21 days of annual leave each year. Emergency loans carry 12% per annum."
    assert cited(text) == (
        "Staff get 21 days of annual leave each year [2]. Emergency loans carry 12% per annum [1]."
    )


def test_a_wrong_marker_is_replaced_and_a_right_one_kept_as_written() -> None:
    assert (
        cited("Staff get 21 days of annual leave [1].") == "Staff get 21 days of annual leave [2]."
    )
    right = "Staff get 21 days of annual leave [2]."
    assert cited(right) == right
    # Beside a right marker, a wrong one goes.
    assert cited("Staff get 21 days of annual leave [1][2].") == right


def test_list_items_are_cited_each_and_lines_without_a_claim_are_left_alone() -> None:
    text = (
        "## Summary\nThe policies say:\n- Loans go up to KES 200,000\n- Leave is 21 days a year\n"
    )
    assert cited(text) == (
        "## Summary\nThe policies say:\n- Loans go up to KES 200,000 [1]\n"
        "- Leave is 21 days a year [2]\n"
    )


def test_a_claim_no_source_supports_keeps_the_visible_mark() -> None:
    text = "The canteen serves free lunch to 300 staff."
    assert cited(text) == text
    answer = check_answer("Is lunch free?", cited(text), SOURCES)
    assert UNSUPPORTED_MARK in answer.text
    assert answer.text.startswith(NO_CITATION_WARNING)


def test_an_abbreviation_at_the_end_keeps_its_stop() -> None:
    assert cited("Branches open from 8:00 a.m. to 5:00 p.m.") == (
        "Branches open from 8:00 a.m. to 5:00 p.m. [3]"
    )


def test_a_not_covered_reply_is_not_cited() -> None:
    text = "The policy documents do not cover this."
    assert cited(text) == text


def test_a_summary_cites_the_sources_that_state_it_together() -> None:
    text = (
        "Branches open Monday to Friday from 8:00 a.m. to 5:00 p.m., and complaints are "
        "resolved within 15 working days."
    )
    out = cited(text)
    assert sorted(cited_numbers(out)) == [3, 4]
    assert check_answer("When?", out, SOURCES).unsupported_sentences == ()


def test_a_marker_to_no_source_is_left_for_the_answer_check_to_report() -> None:
    answer = check_answer("Leave?", cited("Staff get 21 days of annual leave [99]."), SOURCES)
    assert answer.invalid_citation_numbers == (99,)
    assert answer.text == "Staff get 21 days of annual leave [2]."


@dataclass
class FakeReader:
    """A reader that prefers one passage, whatever the claim."""

    favourite: str
    asked: list[str] = field(default_factory=list)
    identity: str = "reader:fake:00000000"

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        self.asked.append(question)
        return [1.0 if self.favourite in p else 0.0 for p in passages]


def test_a_reader_chooses_among_sources_that_both_support_a_claim() -> None:
    twin = make_hit(5, LEAVE.chunk.body, source="hr.md", heading_path=("HR Handbook", "Leave"))
    claim = "Staff get 21 days of annual leave each year."
    # Words alone tie: the first source wins.
    assert cited(claim, (LEAVE, twin)) == "Staff get 21 days of annual leave each year [1]."
    reader = FakeReader(favourite="HR Handbook")
    assert cited(claim, (LEAVE, twin), reader=reader) == (
        "Staff get 21 days of annual leave each year [2]."
    )
    assert reader.asked == ["Staff get 21 days of annual leave each year."]


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("size", [1, 3, 7, 50])
def test_streamed_in_any_pieces_the_text_is_cited_as_a_whole(size: int) -> None:
    text = (
        "Staff get 21 days of annual leave [1]. Emergency loans carry 12% per annum.\n\n"
        "- Branches open from 8:00 a.m. to 5:00 p.m.\n- The canteen is open late.\n"
        "See [the charter](/doc/service-charter.md) for complaints, resolved in 15 working days."
    )
    citer = ClaimCiter("q", SOURCES)
    assert "".join(cite_stream(pieces(text, size), citer)) == cited(text)


def test_words_stream_on_before_their_sentence_ends() -> None:
    consumed: list[str] = []

    def model() -> Iterator[str]:
        for piece in ("Staff get", " 21 days", " of annual", " leave", " each year.", " More."):
            consumed.append(piece)
            yield piece

    stream = cite_stream(model(), ClaimCiter("q", SOURCES))
    first = next(stream)
    assert first == "Staff get"
    assert len(consumed) == 1
    rest = "".join(stream)
    assert first + rest == "Staff get 21 days of annual leave each year [2]. More."


def test_closing_the_stream_closes_the_model_stream() -> None:
    closed: list[bool] = []

    def model() -> Iterator[str]:
        try:
            yield from ("Staff get 21 days", " of annual leave.", " And more.")
        finally:
            closed.append(True)

    stream = cite_stream(model(), ClaimCiter("q", SOURCES))
    next(stream)
    stream.close()
    assert closed == [True]


def test_strip_markers_leaves_the_words() -> None:
    assert (
        strip_markers("Leave is 21 days [2][3]. Loans [1, 2] too.")
        == "Leave is 21 days. Loans too."
    )


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def test_a_model_that_never_cites_shows_an_answer_cited_claim_by_claim(
    server: FakeOpenAIServer,
) -> None:
    server.enqueue(Reply(text="Staff get 21 days of annual leave each year.", chunk_chars=4))
    service = online(server, FakeSearcher(hits=SOURCES))
    run = service.ask("How much annual leave?")
    streamed = "".join(run)
    answer = run.answer()
    assert streamed == "Staff get 21 days of annual leave each year [2]."
    assert answer.text == streamed
    assert [c.hit.chunk.source for c in answer.citations] == ["leave.md"]


def test_with_claims_off_the_answer_keeps_the_models_own_markers(
    server: FakeOpenAIServer,
) -> None:
    server.enqueue(Reply(text="Staff get 21 days of annual leave each year."))
    service = online(server, FakeSearcher(hits=SOURCES), cite_claims=False)
    run = service.ask("How much annual leave?")
    "".join(run)
    assert run.answer().text.startswith(NO_CITATION_WARNING)
    assert run.answer().citations == ()


def test_the_questions_words_do_not_make_a_source_support_a_claim() -> None:
    citer = ClaimCiter("Can I invest in cryptocurrency through the branch?", SOURCES)
    text = "Branches let members invest in cryptocurrency."
    assert cite_text(text, citer) == text


def test_a_figure_given_as_the_whole_answer_cites_the_source_stating_it_for_the_question() -> None:
    citer = ClaimCiter("How many days of annual leave do staff get?", SOURCES)
    assert cite_text("21 days", citer) == "21 days [2]"
    assert cite_text("25 days", citer) == "25 days"
    unrelated = ClaimCiter("How long do complaints take?", SOURCES)
    assert cite_text("21 days", unrelated) == "21 days"
