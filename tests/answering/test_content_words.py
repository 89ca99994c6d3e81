"""Names written with a digit and a joint ("401(k)", "W-2") count as the words they are."""

from __future__ import annotations

import pytest

from assistant.answering.ranking import focus_words
from assistant.words import content_words


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("What is the 401(k) limit?", "401k"),
        ("Does the company match 401k contributions?", "401k"),
        ("Where is my W-2?", "w2"),
        ("Who checks the I-9 form?", "i9"),
        ("When do partners get a K-1?", "k1"),
        ("Is support 24/7?", "24/7"),
        ("How often is a 1:1 with my manager?", "1:1"),
        ("What is the COVID-19 policy?", "covid19"),
    ],
)
def test_a_name_with_a_digit_is_a_content_word(text: str, word: str) -> None:
    assert word in content_words(text)
    assert word in focus_words(text)


def test_the_same_name_written_with_or_without_its_joint_is_one_word() -> None:
    assert content_words("the 401(k) plan") & content_words("a 401k plan") >= {"401k"}
    assert content_words("Form W-2") & content_words("your W2") >= {"w2"}


@pytest.mark.parametrize(
    "text", ["a 30-day notice", "12-weeks", "from 9:30 to 17:00", "on 1/5/2024", "in 2024-25"]
)
def test_quantities_times_dates_and_ranges_stay_numbers(text: str) -> None:
    assert not any(ch.isdigit() for word in content_words(text) for ch in word)
