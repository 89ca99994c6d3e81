"""The shipped reader: the file the tests pin, its scores, and a broken install's message."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from assistant.answering.ranking import token_embedder
from assistant.config import EmbeddingSettings
from assistant.embeddings.factory import make_embedder
from assistant.embeddings.late_reader import WEIGHTS_FILE, LateReader, load_reader
from assistant.errors import EmbeddingError
from assistant.protocols import Reader, TokenEmbedder

# Retrain with `python -m bench.train_late_reader` (docs/reader-model.md), then update both.
SHIPPED_SHA256 = "97831364569c98c41691579dd0fe21781556d7bab03f24ee77b6be48109a139a"
BEREAVEMENT = (
    "Compassionate Leave\n\nStaff may take up to five days of paid compassionate leave on the "
    "death of a close family member, and one day on the death of a pet."
)
FURNITURE = (
    "Home Office\n\nEach employee may claim up to 500 EUR once for home office furniture, "
    "such as a desk or a chair."
)
SICK = (
    "Sick Leave\n\nAn employee who is unwell is entitled to sick leave of up to 30 days on full "
    "pay in any period of twelve months. A medical certificate is needed after three days."
)
# (question, passage, pinned probability): a change to the file or the scoring shows here.
PINNED: list[tuple[str, str, float]] = [
    ("My cat died last night. Can I take a day off?", BEREAVEMENT, 0.195058),
    ("My cat died last night. Can I take a day off?", FURNITURE, 0.001296),
    ("How many days of sick leave on full pay?", SICK, 0.529831),
    ("How many days of sick leave on full pay?", BEREAVEMENT, 0.013141),
    ("Is there a budget for a desk at home?", FURNITURE, 0.068865),
    ("Is there a budget for a desk at home?", SICK, 0.000193),
    ("Do we get a company car?", FURNITURE, 0.005826),
    ("When do I need a medical certificate?", SICK, 0.126056),
    ("Paid leave when a family member dies?", BEREAVEMENT, 0.457208),
    ("Paid leave when a family member dies?", FURNITURE, 0.000445),
]


def _tokens() -> TokenEmbedder:
    embedder = token_embedder(make_embedder(EmbeddingSettings()))
    assert embedder is not None  # the packaged MiniLM returns word pieces
    return embedder


@pytest.fixture(scope="module")
def reader() -> LateReader:
    return load_reader(_tokens())


def test_the_shipped_file_is_the_one_the_tests_pin() -> None:
    digest = hashlib.sha256(WEIGHTS_FILE.read_bytes()).hexdigest()
    assert digest == SHIPPED_SHA256
    assert WEIGHTS_FILE.stat().st_size < 40_000_000


def test_the_reader_is_a_reader_named_by_its_file(reader: LateReader) -> None:
    read: Reader = reader  # satisfies the protocol the answer service takes
    assert read.identity == f"reader:late-minilm:{SHIPPED_SHA256[:8]}"


def test_scores_on_fixed_pairs_are_pinned(reader: LateReader) -> None:
    for question, passage, expected in PINNED:
        assert reader.score(question, [passage])[0] == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize(
    ("question", "right", "wrong"),
    [
        (
            "My cat died last night and I'm really not okay. Can I take a day or two off?",
            BEREAVEMENT,
            FURNITURE,
        ),
        (
            "If I'm out with the flu for a couple of days, will my boss want a doctor's note?",
            SICK,
            BEREAVEMENT,
        ),
        ("how much sick leeve do i get", SICK, FURNITURE),
        ("Can I expense a new desk chair for working from home?", FURNITURE, SICK),
    ],
)
def test_the_passage_that_answers_scores_above_one_that_does_not(
    reader: LateReader, question: str, right: str, wrong: str
) -> None:
    good, bad = reader.score(question, [right, wrong])
    assert good > bad
    assert 0.0 <= bad < good <= 1.0


def test_scores_come_in_input_order_one_per_passage(reader: LateReader) -> None:
    question = "How many days of sick leave on full pay?"
    both = reader.score(question, [SICK, FURNITURE])
    assert reader.score(question, [FURNITURE, SICK]) == pytest.approx(both[::-1], abs=1e-6)
    assert reader.score(question, []) == []


def test_a_corrupted_file_is_refused_naming_it(tmp_path: Path) -> None:
    broken = tmp_path / WEIGHTS_FILE.name
    shutil.copy(WEIGHTS_FILE.with_suffix(".json"), broken.with_suffix(".json"))
    data = bytearray(WEIGHTS_FILE.read_bytes())
    data[len(data) // 2] ^= 0xFF
    broken.write_bytes(bytes(data))
    embedder = _tokens()
    with pytest.raises(EmbeddingError, match=r"late_reader\.npz does not match its manifest"):
        load_reader(embedder, broken)


def test_a_missing_manifest_is_refused_naming_the_model(tmp_path: Path) -> None:
    lonely = tmp_path / WEIGHTS_FILE.name
    shutil.copy(WEIGHTS_FILE, lonely)
    embedder = _tokens()
    with pytest.raises(EmbeddingError, match="cannot read the reader model"):
        load_reader(embedder, lonely)
