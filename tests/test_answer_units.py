"""Answer units respect the document: links, URLs, decimals, abbreviations, lists, tables."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from assistant.answering.units import segment, split_sentences, unlink

VACATION = (
    "## Time off\n\n"
    "Acme offers [20 days of vacation](https://acme.example/handbook/vacation.html) per year, "
    "plus [11 local holidays](https://acme.example/holidays). Unused days expire on "
    "31 March. See https://www.edd.ca.gov/disability/paid-family-leave.htm for state leave."
)


def texts(markdown: str, **kwargs: object) -> list[str]:
    return [u.text for u in segment(markdown, **kwargs)]  # type: ignore[arg-type]


def test_links_are_quoted_by_their_text_never_their_url() -> None:
    units = texts(VACATION, headings=("Handbook",))
    assert units[0] == "Acme offers 20 days of vacation per year, plus 11 local holidays."
    assert not any("acme.example" in u for u in units)


def test_a_bare_url_is_not_split_at_its_dots() -> None:
    units = texts(VACATION)
    assert units[-1] == (
        "See https://www.edd.ca.gov/disability/paid-family-leave.htm for state leave."
    )
    assert not any(u.startswith(("gov/", "ca.", "htm")) for u in units)


def test_decimals_abbreviations_and_initials_do_not_end_a_sentence() -> None:
    text = (
        "The rate is 12.5% p.a. for staff, e.g. tellers and drivers. Ask Mr. J. Otieno at "
        "No. 5 branch, i.e. Nakuru, by 9:00 a.m. on Monday. Claims close at 5 p.m. Friday."
    )
    assert split_sentences(text) == [
        "The rate is 12.5% p.a. for staff, e.g. tellers and drivers.",
        "Ask Mr. J. Otieno at No. 5 branch, i.e. Nakuru, by 9:00 a.m. on Monday.",
        "Claims close at 5 p.m. Friday.",
    ]


def test_headings_are_not_units_but_the_path_they_sit_under() -> None:
    units = segment(
        "### Maternity Leave\n\nA mother gets three months on full pay.\n\n"
        "### Paternity Leave\n\nA father gets two weeks on full pay.",
        headings=("Leave Policy", "Family Leave"),
    )
    assert [u.text for u in units] == [
        "A mother gets three months on full pay.",
        "A father gets two weeks on full pay.",
    ]
    assert units[1].headings == ("Leave Policy", "Family Leave", "Paternity Leave")


def test_list_items_keep_their_lead_in_as_context() -> None:
    units = segment(
        "Staff may claim the following:\n\n- Taxi fares up to KES 2,000 per trip.\n"
        "- A home office stipend of $3,000,\n  paid once."
    )
    items = [u for u in units if u.kind == "item"]
    assert [u.text for u in items] == [
        "Taxi fares up to KES 2,000 per trip.",
        "A home office stipend of $3,000, paid once.",
    ]
    assert items[0].context == "Staff may claim the following:"


def test_a_table_row_is_shown_with_its_header() -> None:
    units = segment("| Item | Limit |\n|---|---|\n| Hotel | 150 EUR |\n| Taxi | 40 EUR |")
    assert [u.text for u in units] == [
        "| Item | Limit |\n|---|---|\n| Hotel | 150 EUR |",
        "| Item | Limit |\n|---|---|\n| Taxi | 40 EUR |",
    ]
    assert all(u.is_table for u in units)


def test_a_definition_keeps_its_term() -> None:
    units = segment(
        "* **Moonlighting.** Paid work for another employer. It needs written approval.\n"
        "- Interest: 16% per annum on a reducing balance."
    )
    assert units[0].text == "Moonlighting. Paid work for another employer."
    assert units[0].kind == "definition"
    assert units[1].text == "It needs written approval."
    assert units[1].headings == ("Moonlighting",)
    assert units[2].text == "Interest: 16% per annum on a reducing balance."


def test_dot_leader_lines_become_key_value_units() -> None:
    units = texts("are open at these times:\n\n    Saturday ........ 9:00 a.m. to 1:00 p.m.\n")
    assert units[-1] == "Saturday: 9:00 a.m. to 1:00 p.m."


def test_unlink_drops_images_emphasis_and_tags() -> None:
    assert unlink("**Bold** and _it_ ![logo](x.png) <b>tag</b> [a](b)") == "Bold and it logo tag a"


# Two letters at least, and none that spell an abbreviation: a single letter before a full
# stop reads as an initial ("J. Smith"), and "cf." or "pp." do not end a sentence.
WORD = st.text(alphabet="bgjkqwxyz", min_size=2, max_size=8)
SENTENCE = st.lists(WORD, min_size=3, max_size=8).map(lambda ws: " ".join(ws).capitalize() + ".")


@given(
    before=SENTENCE,
    link_text=st.lists(WORD, min_size=1, max_size=4).map(" ".join),
    path=st.lists(WORD, min_size=1, max_size=4).map("/".join),
    after=SENTENCE,
)
def test_no_unit_contains_the_raw_url_of_a_markdown_link(
    before: str, link_text: str, path: str, after: str
) -> None:
    url = f"https://docs.example.org/{path}.html"
    text = f"{before} Read [{link_text}]({url}) today. {after}"
    units = texts(text)
    assert not any("docs.example.org" in u or "](" in u for u in units)
    assert any(link_text in u for u in units)


@given(
    whole=st.integers(min_value=0, max_value=99_999),
    fraction=st.integers(min_value=0, max_value=999),
    words=st.lists(WORD, min_size=2, max_size=6),
)
def test_units_never_split_inside_a_number(whole: int, fraction: int, words: list[str]) -> None:
    number = f"{whole:,}.{fraction}"
    text = f"The limit is {number} {' '.join(words)}. Next rule applies here."
    units = texts(text)
    assert sum(number in u for u in units) == 1
    assert units[-1] == "Next rule applies here."
