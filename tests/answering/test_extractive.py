"""The offline answer mode quotes the best sentences and table rows, with citations."""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from assistant.answering.citations import check_answer
from assistant.answering.extractive import (
    EXTRACTIVE_LABEL,
    HEDGE,
    NOTHING_FOUND,
    Draft,
    Passage,
    draft_extractive,
    extract_passages,
    relevant_unknown_words,
    stream_extractive,
)
from assistant.types import Banner
from assistant.words import STOPWORDS
from tests.support.hit_factory import make_hit

LEAVE = make_hit(
    1,
    "## Annual leave\n\nFull-time members receive 25 days of annual leave per year. "
    "The office closes on public holidays. Requests go to your line manager.",
)
LIMITS = make_hit(
    2,
    "Limits apply per trip.\n\n| Item | Limit |\n|---|---|\n| Hotel | 150 EUR per night |\n"
    "| Taxi | 40 EUR per ride |",
    title="Travel",
    heading_path=("Travel", "Limits"),
)


def test_best_sentence_quoted_with_its_citation() -> None:
    text = "".join(stream_extractive("How many days of annual leave?", (LEAVE, LIMITS)))
    assert text.startswith(EXTRACTIVE_LABEL)
    assert "> Full-time members receive 25 days of annual leave per year. [1]" in text
    assert "public holidays" not in text


def test_table_row_kept_whole_with_its_header() -> None:
    passages = extract_passages("What is the hotel limit per night?", (LEAVE, LIMITS))
    rows = [p for p in passages if p.is_table]
    assert rows[0].text == "| Item | Limit |\n|---|---|\n| Hotel | 150 EUR per night |"
    assert rows[0].number == 2
    text = "".join(stream_extractive("What is the hotel limit per night?", (LEAVE, LIMITS)))
    assert "From [2]:\n\n| Item | Limit |\n|---|---|\n| Hotel | 150 EUR per night |" in text


def test_streams_in_small_deltas() -> None:
    banner, *deltas = stream_extractive("annual leave days", (LEAVE,))
    assert isinstance(banner, Banner)  # the label comes first, typed, as data
    assert len(deltas) > 10
    assert max(len(d) for d in deltas) < 30


def test_nothing_matching_says_so() -> None:
    text = "".join(stream_extractive("quantum chromodynamics", (LEAVE,)))
    assert NOTHING_FOUND in text
    assert "[1]" not in text


def test_extractive_answers_pass_the_citation_check() -> None:
    question = "How many days of annual leave, and what is the hotel limit?"
    text = "".join(stream_extractive(question, (LEAVE, LIMITS)))
    answer = check_answer(question, text, (LEAVE, LIMITS), offline=True)
    assert {c.number for c in answer.citations} == {1, 2}
    assert answer.invalid_citation_numbers == ()
    assert answer.unsupported_sentences == ()


def test_at_most_three_passages_best_first_and_no_near_duplicates() -> None:
    # The old answer quoted four passages in source order, repeats included.
    body = " ".join(f"Rule {i} says annual leave is granted." for i in range(10))
    other = make_hit(
        2, "Annual leave requests go to the line manager. Annual leave is unpaid on probation."
    )
    passages = extract_passages("annual leave", (make_hit(1, body), other))
    assert 1 <= len(passages) <= 3
    assert [p.score for p in passages] == sorted((p.score for p in passages), reverse=True)
    assert sum(p.text.startswith("Rule ") for p in passages) == 1


HANDBOOK = make_hit(
    1,
    "## Vacation\n\nAcme offers [20 days of vacation](https://acme.example/vacation) per "
    "year, plus [11 local holidays](https://acme.example/holidays). Vacation requests go "
    "through the HR portal. Managers approve requests within a week.",
    title="Employee Handbook",
    heading_path=("Employee Handbook", "Time Off"),
)
BENEFITS = make_hit(
    2,
    "## Home office\n\nEveryone gets a one-time stipend of $3,000 to set up a home office.\n\n"
    "## Retirement\n\nThe company matches 100% of your 401(k) contributions up to 6% of salary.",
    title="Benefits",
    heading_path=("Benefits",),
)
MOONLIGHTING = make_hit(
    3,
    "## Moonlighting\n\nEmployees may take on outside employment as long as it does not "
    "compete with the company. Tell your manager before you start.",
    title="Code of Conduct",
    heading_path=("Code of Conduct", "Conflicts of Interest"),
)


class ConceptEmbedder:
    """Embeds by concepts, so a paraphrase ("freelance work") meets the text ("moonlighting")."""

    identity = "fake:concepts"
    dimension = 1024
    max_input_tokens = 256
    CONCEPTS: ClassVar[dict[str, int]] = {
        "freelance": 1,
        "side": 1,
        "moonlighting": 1,
        "outside": 1,
        "employment": 1,
    }

    def __init__(self) -> None:
        self.calls = 0

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) for t in texts]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        out[:, 0] = 1e-3
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                if word not in STOPWORDS:
                    out[row, self.CONCEPTS.get(word, 2 + zlib.crc32(word.encode()) % 1022)] += 1.0
        normalised: npt.NDArray[np.float32] = out / np.linalg.norm(out, axis=1, keepdims=True)
        return normalised


def test_a_sentence_with_markdown_links_is_quoted_by_its_link_text() -> None:
    text = "".join(stream_extractive("How many vacation days do I get a year?", (HANDBOOK,)))
    lead = text.split("\n\n")[1]
    assert lead == "> Acme offers 20 days of vacation per year, plus 11 local holidays. [1]"
    assert "https://" not in text


def test_amount_questions_are_answered_not_refused() -> None:
    # Both got "No passage of the retrieved sections matches the question's words".
    sources = (BENEFITS, HANDBOOK)
    office = "".join(stream_extractive("How much can I spend setting up my home office?", sources))
    assert "> Everyone gets a one-time stipend of $3,000 to set up a home office. [1]" in office
    match = "".join(stream_extractive("Does the company match my 401k?", sources))
    assert match.split("\n\n")[1].startswith("> The company matches 100% of your 401(k)")
    assert NOTHING_FOUND not in office + match


def test_meaning_ranks_a_paraphrase_first_with_one_embedding_call() -> None:
    embedder = ConceptEmbedder()
    question = "Am I allowed to do freelance work on the side?"
    draft = draft_extractive(question, (HANDBOOK, MOONLIGHTING), embedder=embedder)
    assert draft.covered
    assert draft.passages[0].text.startswith("Employees may take on outside employment")
    assert draft.passages[0].number == 2
    assert embedder.calls == 1


def test_unrelated_passages_are_not_presented_as_an_answer() -> None:
    draft = draft_extractive(
        "What is on the canteen menu on Fridays?", (HANDBOOK, BENEFITS), embedder=ConceptEmbedder()
    )
    assert not draft.covered
    assert draft.passages == ()


def test_only_unknown_words_that_matter_are_named() -> None:
    lay_off = make_hit(1, "Staff who are made redundant in a lay off receive 4 weeks of pay.")
    words = relevant_unknown_words(("laid", "the", "severance"), (lay_off,))
    assert words == ("severance",)
    text = "".join(
        stream_extractive(
            "How much pay do I get if I am laid off?", (lay_off,), unknown_words=("laid",)
        )
    )
    assert "never use" not in text
    assert "> Staff who are made redundant in a lay off receive 4 weeks of pay. [1]" in text


def test_a_bare_label_is_not_quoted_as_an_answer() -> None:
    deceased = make_hit(
        1,
        "## Deceased users\n\nNext of kin of a deceased user can ask for access to the "
        "account through the support portal. Include:\n\n- Contact information\n"
        "- Name of the deceased account holder\n",
        title="Deceased User Policy",
        heading_path=("Deceased User Policy",),
    )
    draft = draft_extractive(
        "How can next of kin get access to a deceased user's account?", (deceased,)
    )
    quoted = [p.text for p in draft.passages]
    assert quoted[0].startswith("Next of kin of a deceased user can ask for access")
    assert "Contact information" not in quoted


def test_a_sentence_about_the_document_itself_does_not_lead() -> None:
    guide = make_hit(
        1,
        "## Removing private information\n\nThis guide describes how to ask us to remove "
        "private information from a repository. We ask the repository owner to delete or "
        "modify the private information within one business day.",
        title="Private Information Removal",
        heading_path=("Private Information Removal",),
    )
    draft = draft_extractive(
        "How do you remove private information from a repository?",
        (guide,),
        embedder=ConceptEmbedder(),
    )
    assert draft.passages[0].text.startswith("We ask the repository owner to delete")


def test_a_fragment_is_not_quoted_as_an_answer() -> None:
    safe_harbor = make_hit(
        1,
        "## Safe harbor\n\nResearch in good faith is authorized conduct under Cal. Penal Code "
        "502(c). We will not pursue civil action against researchers who follow this policy.",
        title="Legal Safe Harbor",
        heading_path=("Legal Safe Harbor",),
    )
    draft = draft_extractive(
        "Will GitHub pursue civil action against security researchers?", (safe_harbor,)
    )
    assert all(p.text != "Penal Code 502(c)." for p in draft.passages)


def test_a_sentence_leads_rather_than_the_table_row_saying_the_same() -> None:
    loans = make_hit(
        1,
        "## Asset financing\n\nInterest: 16% per annum on a reducing balance.\n\n"
        "| Product | Interest |\n|---|---|\n| Asset Financing Loan | 16% p.a. reducing balance |",
        title="Loan Products",
        heading_path=("Loan Products",),
    )
    draft = draft_extractive("What is the interest rate on an Asset Financing Loan?", (loans,))
    assert draft.passages[0].text == "Interest: 16% per annum on a reducing balance."


def test_each_part_of_a_two_part_question_gets_its_answer() -> None:
    deposits = make_hit(
        1,
        "## Interest on deposits\n\nInterest on deposits is calculated on the average monthly "
        "balance. Deposits made in December earn interest for that month only. Interest on "
        "deposits is credited to the member's account in March. Members may see their "
        "interest on deposits on their statement.",
        title="Deposits",
        heading_path=("Deposits",),
    )
    tax = make_hit(
        2,
        "## Tax\n\nWithholding tax at 5% is deducted from interest before payment.",
        title="Dividend Policy",
        heading_path=("Dividend Policy",),
    )
    draft = draft_extractive(
        "How is interest on deposits calculated, and what tax is taken off it?",
        (deposits, tax),
        embedder=ConceptEmbedder(),
    )
    quoted = [p.text for p in draft.passages]
    assert quoted[0].startswith("Interest on deposits is calculated on the average")
    assert any("Withholding tax at 5%" in q for q in quoted)


def test_a_list_item_that_goes_on_from_its_lead_in_is_quoted_with_it() -> None:
    dividends = make_hit(
        1,
        "## Payment of dividends\n\nEach member chooses how to receive their dividend:\n\n"
        "- credited to their deposit account;\n- sent to their registered M-Pesa number;\n"
        "- paid by cheque at a branch.\n",
        title="Dividend Policy",
        heading_path=("Dividend Policy",),
    )
    draft = draft_extractive("Can my dividend be sent to my M-Pesa number?", (dividends,))
    assert draft.passages[0].text == (
        "Each member chooses how to receive their dividend: … sent to their registered "
        "M-Pesa number;"
    )
    text = "".join(stream_extractive("x", (dividends,), draft=draft))
    assert check_answer("x", text, (dividends,), offline=True).unsupported_sentences == ()


def test_a_comparison_quotes_both_things_compared() -> None:
    emergency = make_hit(
        1,
        "## Emergency Loan\n\nEmergency Loans carry interest at 12% per annum on a reducing "
        "balance. No processing fee is charged on an Emergency Loan. Emergency Loans help "
        "members meet urgent costs.",
        title="Loan Products",
        heading_path=("Loan Products", "Emergency Loan"),
    )
    school = make_hit(
        2,
        "## School Fees Loan\n\nInterest: 10% per annum on a reducing balance. The Sacco pays "
        "the school directly.",
        title="Loan Products",
        heading_path=("Loan Products", "School Fees Loan"),
    )
    draft = draft_extractive(
        "How does the interest on an Emergency Loan compare with a School Fees Loan?",
        (emergency, school),
        embedder=ConceptEmbedder(),
    )
    quoted = " ".join(p.text for p in draft.passages)
    assert "12% per annum" in quoted
    assert "10% per annum" in quoted


def test_the_words_of_a_comparison_or_of_how_soon_are_not_named_as_unknown() -> None:
    loans = make_hit(1, "Emergency Loans carry interest at 12% per annum.")
    asked = ("compare", "difference", "soon", "quickly", "cryptocurrency")
    assert relevant_unknown_words(asked, (loans,)) == ("cryptocurrency",)


def test_a_question_the_document_asks_is_not_the_answer() -> None:
    faq = make_hit(
        1,
        "## Law enforcement\n\nAre you a law enforcement officer asking for user data? We "
        "disclose user data to law enforcement only with a subpoena, court order or warrant.",
        title="Guidelines for Legal Requests",
        heading_path=("Guidelines for Legal Requests",),
    )
    draft = draft_extractive(
        "How do you handle law enforcement requests for user data?",
        (faq,),
        embedder=ConceptEmbedder(),
    )
    assert draft.passages[0].text.startswith("We disclose user data to law enforcement only")


def test_a_hedged_draft_quotes_the_closest_passage_under_the_hedge() -> None:
    passage = Passage(1, "Full-time members receive 25 days of annual leave per year.", 0.5, 0)
    text = Draft((passage,), covered=False, hedged=True).text
    assert text.split("\n\n")[:3] == [
        EXTRACTIVE_LABEL,
        HEDGE,
        "> Full-time members receive 25 days of annual leave per year. [1]",
    ]
    # Neither covered nor hedged: the refusal, whatever passages were drafted.
    assert NOTHING_FOUND in Draft((passage,), covered=False).text
