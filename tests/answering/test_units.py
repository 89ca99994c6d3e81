"""Answer units respect the document: links, URLs, decimals, abbreviations, lists, tables."""

from __future__ import annotations

import re

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


def test_email_and_url_autolinks_are_quoted_by_their_address() -> None:
    units = texts(
        "You can also send an email notification to <copyright@github.com>. "
        "The form is at <https://support.example.com/dmca>."
    )
    assert units == [
        "You can also send an email notification to copyright@github.com.",
        "The form is at https://support.example.com/dmca.",
    ]


ADDRESS = (
    "If you still wish to mail us your notice, our physical address is:\n\n"
    "```text\nGitHub, Inc\nAttn: DMCA Agent\n88 Colin P Kelly Jr St\nSan Francisco, CA 94107\n```\n"
)


def test_a_short_code_block_after_a_lead_in_is_quoted_with_it() -> None:
    assert texts(ADDRESS) == [
        "If you still wish to mail us your notice, our physical address is: GitHub, Inc, "
        "Attn: DMCA Agent, 88 Colin P Kelly Jr St, San Francisco, CA 94107"
    ]


def test_other_code_blocks_are_not_units() -> None:
    config = "\n".join(f"Option{n} yes" for n in range(8))
    units = texts(
        "Set these options in the server configuration.\n\n```ini\nAllowGroups admins\n"
        f"Port 22\n```\n\nThe baseline file holds these lines:\n\n```\n{config}\n```\n\n"
        "Keys are rotated every year."
    )
    assert units == [
        "Set these options in the server configuration.",
        "The baseline file holds these lines:",
        "Keys are rotated every year.",
    ]


def test_html_blocks_are_not_units() -> None:
    units = texts(
        "<!-- markdownlint-disable GHD034 -->\n\nStaff get 20 days of leave.\n\n"
        '<div class="note">\n<b>Internal only</b>\n</div>\n\nUnused days expire in March.'
    )
    assert units == ["Staff get 20 days of leave.", "Unused days expire in March."]


def test_block_quotes_are_prose_and_a_quoted_rule_keeps_its_lead_in() -> None:
    units = texts(
        "- Copyright owners investigate first. Each use case is different.\n"
        "  > Example: Acme finds its own code in a public repository.\n\n"
        "Our Standards of Conduct prohibit:\n"
        "> Bribing government officials to gain an unfair advantage.\n"
    )
    assert units == [
        "Copyright owners investigate first. Each use case is different.",
        "Example: Acme finds its own code in a public repository.",
        "Our Standards of Conduct prohibit: Bribing government officials to gain an unfair "
        "advantage.",
    ]


def test_nested_list_items_take_their_parent_item_as_lead_in() -> None:
    units = segment(
        "Staff may claim the following:\n\n- Travel costs:\n  - Taxi fares up to KES 2,000.\n"
        "  - Bus fares in full.\n- Meals up to KES 500 a day."
    )
    assert [(u.text, u.context) for u in units] == [
        ("Staff may claim the following:", ""),
        ("Travel costs:", "Staff may claim the following:"),
        ("Taxi fares up to KES 2,000.", "Travel costs:"),
        ("Bus fares in full.", "Travel costs:"),
        ("Meals up to KES 500 a day.", "Staff may claim the following:"),
    ]


def test_reference_links_and_their_definitions_are_not_quoted() -> None:
    units = texts(
        "Read the [leave policy][lp] and the [holiday list] first.\n\n"
        '[lp]: https://acme.example/leave "Leave policy"\n'
        "[holiday list]: https://acme.example/holidays\n"
    )
    assert units == ["Read the leave policy and the holiday list first."]


def test_a_hard_line_break_ends_the_line_not_the_words() -> None:
    text = "Send claims to the finance office.\\\nClaims close on Friday.  \nLate ones wait."
    units = texts(text)
    assert units == [
        "Send claims to the finance office.",
        "Claims close on Friday.",
        "Late ones wait.",
    ]


def test_rows_cut_off_from_their_table_by_a_blank_line_keep_its_header() -> None:
    # Merged pieces of a split table are one blank line apart (retrieval's section text).
    units = texts("| Item | Limit |\n|---|---|\n| Hotel | 150 EUR |\n\n| Taxi | 40 EUR |")
    assert units[1] == "| Item | Limit |\n|---|---|\n| Taxi | 40 EUR |"


def test_a_bold_italic_run_in_heading_is_a_term() -> None:
    units = segment(
        "***Tell the Truth.*** <!-- markdownlint-disable-line emphasis-style -->\n"
        "The DMCA requires that you swear to the facts. It is a crime to lie."
    )
    assert units[0].text == "Tell the Truth. The DMCA requires that you swear to the facts."
    assert units[0].kind == "definition"
    assert units[1].headings == ("Tell the Truth",)


def test_stars_around_digits_are_kept_as_written() -> None:
    # CommonMark reads *483* as emphasis; in a policy it is part of a USSD code.
    assert texts("Dial *483*20# from your **registered** phone.") == [
        "Dial *483*20# from your registered phone."
    ]


def test_plain_text_from_pdf_and_word_keeps_its_bullets_and_headings() -> None:
    units = segment(
        "Eligibility\nAll permanent staff may apply:\n• Staff on probation may not apply.\n"
        "(a) Contract staff need written approval.\n"
        "  a. **Processing of Personal Data.** By default, the Sacco is the controller.\n"
        "**(b) Grant.** The member grants the Sacco a licence to use the data."
    )
    assert [(u.text, u.kind) for u in units] == [
        ("All permanent staff may apply:", "sentence"),
        ("Staff on probation may not apply.", "item"),
        ("Contract staff need written approval.", "item"),
        ("Processing of Personal Data. By default, the Sacco is the controller.", "definition"),
        ("(b) Grant. The member grants the Sacco a licence to use the data.", "definition"),
    ]
    assert units[0].headings == ("Eligibility",)
    assert units[1].context == "All permanent staff may apply:"


# Random Markdown: a link's target (host "target.example") is never shown; an autolink's
# address (host "auto.example") is its text, so it may be.
PATH = st.lists(WORD, min_size=1, max_size=3).map("/".join)
INLINE = st.one_of(
    WORD,
    WORD.map(str.capitalize),
    st.tuples(st.lists(WORD, min_size=1, max_size=3).map(" ".join), PATH).map(
        lambda t: f"[{t[0]}](https://target.example/{t[1]})"
    ),
    PATH.map(lambda p: f"<https://auto.example/{p}>"),
    WORD.map(lambda w: f"<{w}@auto.example>"),
    WORD.map(lambda w: f"*{w}*"),
    WORD.map(lambda w: f"**{w}**"),
    WORD.map(lambda w: f"_{w}_"),
    WORD.map(lambda w: f"`{w}`"),
    WORD.map(lambda w: f"**_{w}_**"),
)
PROSE = st.lists(INLINE, min_size=3, max_size=8).map(lambda ps: " ".join(ps) + ".")
BLOCK = st.one_of(
    st.lists(PROSE, min_size=1, max_size=3).map(" ".join),
    st.lists(PROSE, min_size=1, max_size=4).map(lambda items: "\n".join(f"- {i}" for i in items)),
    st.lists(PROSE, min_size=1, max_size=3).map(
        lambda items: "\n".join(f"{n}. {i}" for n, i in enumerate(items, start=1))
    ),
    st.lists(st.tuples(INLINE, INLINE), min_size=1, max_size=3).map(
        lambda rows: "| Name | Value |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)
    ),
    st.lists(WORD, min_size=1, max_size=4).map(lambda ws: "```\n" + "\n".join(ws) + "\n```"),
    st.lists(WORD, min_size=1, max_size=4).map(lambda ws: "## " + " ".join(ws).capitalize()),
    WORD.map(lambda w: f"<!-- {w} -->"),
)


@given(blocks=st.lists(BLOCK, min_size=1, max_size=6))
def test_units_of_random_markdown_are_plain_words_from_the_source(blocks: list[str]) -> None:
    source = "\n\n".join(blocks)
    units = texts(source)
    words = set(re.findall(r"[A-Za-z0-9]+", source))
    assert units or all(block.startswith(("```", "## ", "<!--")) for block in blocks)
    for unit in units:
        assert not any(mark in unit for mark in ("](", "<http", "**", "`", "<!--"))
        assert "target.example" not in unit
        assert set(re.findall(r"[A-Za-z0-9]+", unit)) <= words
    for address in re.findall(r"<([^<>\s]+auto\.example[^<>\s]*)>", source):
        assert any(address in unit for unit in units)


def test_a_window_that_starts_inside_a_code_block_keeps_the_prose_after_it() -> None:
    # A section window may begin mid-code: its first fence closes a block, it opens none.
    window = "Port 22\nAllowGroups admins\n```\n\nKeys are rotated every year.\n\nUse the VPN."
    assert texts(window) == ["Keys are rotated every year.", "Use the VPN."]
    assert texts("Port 22\n```\n\nKeys are rotated every year.", table_header="```ini\n") == [
        "Keys are rotated every year."
    ]
    assert texts("Set it up as follows.\n\n```\nPort 22\n") == ["Set it up as follows."]


def test_an_example_or_a_note_defines_no_term() -> None:
    units = segment(
        "Example: An employee finds some of the company's code in a repository. She sends "
        "a takedown notice.\n\nNote: Notices are answered within a day."
    )
    assert [u.kind for u in units] == ["sentence", "sentence", "sentence"]
    assert all("Example" not in u.headings and "Note" not in u.headings for u in units)
