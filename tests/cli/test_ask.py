"""``python -m assistant ask``: the chat's answer as text and as a JSON-lines contract."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from assistant.answering.safety import unescape_markdown
from assistant.answering.service import build_assistant
from assistant.config import Settings, StoreSettings
from assistant.retrieval.factory import open_retriever
from assistant.session import Desk
from tests.conftest import FakeEmbedder
from tests.support.cli_index import build_index, run_cli
from tests.support.openai_server import FakeOpenAIServer, Reply

ANSWER_KEYS = {"id", "answer", "mode", "no_good_match", "citations", "unsupported", "sources"}
CITATION_KEYS = {"n", "chunk_id", "source", "heading_path", "page"}
SOURCE_KEYS = CITATION_KEYS | {"score"}
OFF_TOPIC = "quantum chromodynamics lattice gauge"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_index(tmp_path_factory.mktemp("ask"))


def ask_json(
    index: Path, lines: str, *extra: str, env: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    ran = run_cli(["ask", "--json", "--index", str(index), *extra], stdin=lines, env=env)
    assert ran.code == 0, ran.err
    assert len(ran.searchers) == 1  # one searcher, so one model load, for every line
    return [json.loads(line) for line in ran.out.splitlines()]


def test_json_mode_writes_one_contract_line_per_request_line(index: Path) -> None:
    lines = (
        '{"id": "r1", "question": "What interest do emergency loans carry?"}\n'
        "\n"
        "this is not json\n"
        '{"id": 7}\n'
        f'{{"id": 8, "question": "{OFF_TOPIC}"}}\n'
    )
    answered, bad, missing, refused = ask_json(index, lines)
    assert set(answered) == ANSWER_KEYS
    assert answered["id"] == "r1"
    assert answered["mode"] == "extractive"
    assert answered["no_good_match"] is False
    assert isinstance(answered["answer"], str)
    assert "12% per annum" in answered["answer"]
    assert answered["unsupported"] == []
    assert answered["citations"], "the answer cites its sources"
    by_n = {s["n"]: s for s in answered["sources"]}
    assert sorted(by_n) == list(range(1, len(answered["sources"]) + 1))
    for source in answered["sources"]:
        assert set(source) == SOURCE_KEYS
        assert isinstance(source["score"], float)
        assert source["page"] is None  # Markdown has no pages
    for citation in answered["citations"]:
        assert set(citation) == CITATION_KEYS
        assert f"[{citation['n']}]" in answered["answer"]
        assert {k: by_n[citation["n"]][k] for k in CITATION_KEYS} == citation
    first = answered["citations"][0]
    assert first["source"] == "loans.md"
    assert first["heading_path"] == "Loan Policy > Emergency Loans"
    assert set(bad) == {"id", "error"}
    assert bad["id"] is None
    assert missing == {"id": 7, "error": "bad request line: 'question' must be a non-empty string"}
    assert refused["id"] == 8
    assert refused["mode"] == "no good match"
    assert refused["no_good_match"] is True
    assert refused["citations"] == []
    assert refused["answer"].startswith("The policy documents do not appear to cover this question")
    assert refused["sources"], "the closest sections are still listed"


def test_json_answer_is_the_text_the_chat_shows(index: Path) -> None:
    from assistant.web.ui import make_responder  # imports gradio: only this test pays for it

    question = "How many days of annual leave do staff receive?"
    (line,) = ask_json(index, json.dumps({"id": 1, "question": question}) + "\n")
    settings = Settings(store=StoreSettings(path=index))
    retriever = open_retriever(settings, embedder=FakeEmbedder())
    # As the web app wires it: the offline answerer ranks with the index's embedder.
    service = build_assistant(settings, searcher=retriever, embedder=retriever.embedder)
    final = list(make_responder(Desk(service, settings=settings))(question, []))[-1]
    # The chat links each marker to its passage ([[1]](/doc/...)); the reader sees "[1]".
    shown = unescape_markdown(str(final[0].content))
    assert line["answer"] == re.sub(
        r"\[\[(\d+)\]\]\(/doc/[^\s)]*(?: \"[^\"]*\")?\)", r"[\1]", shown
    )
    assert "21 days of annual leave" in line["answer"]


TABLE_ANSWER = "From [1]: emergency loans carry interest at 12% per annum [1]."


def test_plain_text_outputs_carry_no_neutraliser_escapes(index: Path) -> None:
    """Issue 28: ``From [2]:`` (a table header, say) printed as ``From [2]\\:`` in ``ask``."""
    line = model_line(index, TABLE_ANSWER)
    assert "\\" not in line["answer"], line["answer"]
    assert "From [1]:" in line["answer"]
    with FakeOpenAIServer(default=Reply(text=TABLE_ANSWER)) as server:
        env = {"ASSISTANT_LLM_BASE_URL": server.base_url, "ASSISTANT_LLM_API_KEY": "test"}
        ran = run_cli(["ask", "--index", str(index), "Emergency loan interest?"], env=env)
    assert ran.code == 0, ran.err
    assert "\\" not in ran.out, ran.out
    assert "From [1]:" in ran.out


def model_line(index: Path, text: str, **env: str) -> dict[str, Any]:
    with FakeOpenAIServer(default=Reply(text=text)) as server:
        env |= {"ASSISTANT_LLM_BASE_URL": server.base_url, "ASSISTANT_LLM_API_KEY": "test"}
        (line,) = ask_json(index, '{"id": "m", "question": "Emergency loan interest?"}\n', env=env)
        assert len(server.requests) == 1
    return line


INVENTED = "Emergency loans carry 12% per annum [1]. Staff get 99 days off [1]. See also [9]."


def test_a_configured_model_answers_and_its_citations_are_checked(index: Path) -> None:
    line = model_line(index, INVENTED, ASSISTANT_GROUNDED_ONLY="0")
    assert line["mode"] == "model"
    assert "[9]" not in line["answer"]  # a marker to no source is dropped, as in the chat
    assert [c["n"] for c in line["citations"]] == [1]
    assert line["unsupported"] == ["Staff get 99 days off [1]."]
    assert "Staff get 99 days off [1]. ⚠" in line["answer"]  # shown, marked


def test_by_default_an_unsupported_model_sentence_is_withheld(index: Path) -> None:
    line = model_line(index, INVENTED)
    assert line["mode"] == "model"
    assert line["unsupported"] == ["Staff get 99 days off [1]."]  # still reported
    assert "99" not in line["answer"]
    assert line["answer"].startswith("Emergency loans carry 12% per annum [1].")
    # A visible note stands where it stood; the rest of the answer stays.
    assert line["answer"] == (
        "Emergency loans carry 12% per annum [1]. "
        "*(One statement was withheld: its figure is not in the cited sources.)* See also."
    )
    cited = {c["n"] for c in line["citations"]}
    assert all(f"[{n}]" in line["answer"] for n in cited)


def test_a_model_saying_not_covered_in_its_own_words_gets_the_no_match_line(index: Path) -> None:
    # Not the prompt's fixed sentence: a model's own wording of the same verdict.
    refusal = "Unfortunately, the provided documents don't say anything about that."
    with FakeOpenAIServer(default=Reply(text=refusal)) as server:
        env = {"ASSISTANT_LLM_BASE_URL": server.base_url, "ASSISTANT_LLM_API_KEY": "test"}
        question = '{"id": "c", "question": "What interest do emergency loans carry?"}\n'
        (line,) = ask_json(index, question, env=env)
        assert len(server.requests) == 1  # retrieval matched, so the model was asked
    assert set(line) == ANSWER_KEYS
    assert line["mode"] == "no good match"
    assert line["no_good_match"] is True
    assert line["citations"] == []
    assert line["unsupported"] == []
    assert line["answer"].startswith("The policy documents do not appear to cover this question")
    assert refusal not in line["answer"]
    assert line["sources"], "the closest sections are still listed"
    assert line["sources"][0]["heading_path"].split(" > ")[-1] in line["answer"]


def test_source_and_tag_filters_restrict_the_sources(index: Path) -> None:
    (line,) = ask_json(
        index, '{"id": 1, "question": "How many days of leave?"}\n', "--source", "leave.md"
    )
    assert {s["source"] for s in line["sources"]} == {"leave.md"}
    (typed,) = ask_json(
        index, '{"id": 2, "question": "How many days of leave?"}\n', "--source", "Leave"
    )
    assert {s["source"] for s in typed["sources"]} == {"leave.md"}


@pytest.mark.parametrize(
    ("flag", "typed", "message"),
    [
        ("--source", "leav.md", "no document 'leav.md' in the index; did you mean 'leave.md'"),
        ("--tag", "no-such-tag", "no tag 'no-such-tag' in the index; the index has no tags"),
    ],
)
def test_an_unknown_source_or_tag_is_a_usage_error(
    index: Path, flag: str, typed: str, message: str
) -> None:
    for argv in (["ask", "leave"], ["ask", "--json"]):
        ran = run_cli(
            [*argv, "--index", str(index), flag, typed], stdin='{"id": 1, "question": "x"}\n'
        )
        assert (ran.code, ran.out) == (2, "")
        assert message in ran.err


def test_k_sets_the_number_of_sources(index: Path) -> None:
    (line,) = ask_json(index, '{"id": 1, "question": "loans and leave"}\n', "-k", "2")
    assert len(line["sources"]) == 2


def test_readable_output_is_the_answer_then_the_cited_sources(index: Path) -> None:
    ran = run_cli(["ask", "What interest do emergency loans carry?", "--index", str(index)])
    assert ran.code == 0, ran.err
    answer, _, listing = ran.out.rstrip("\n").partition("\n\nSources:\n")
    assert "12% per annum on a reducing balance" in answer
    entries = listing.splitlines()
    assert entries, ran.out
    cited = sorted({int(n) for n in re.findall(r"\[(\d+)\]", answer)})
    assert [int(e[1 : e.index("]")]) for e in entries] == cited
    assert "[1] Loan Policy > Emergency Loans — loans.md" in entries


def test_readable_output_of_no_good_match_lists_the_closest_sections(index: Path) -> None:
    ran = run_cli(["ask", OFF_TOPIC, "--index", str(index)])
    assert ran.code == 0
    assert ran.out.startswith("The policy documents do not appear to cover this question")
    assert "\nClosest sections:\n[1] " in ran.out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ask"], "give a question"),
        (["ask", "x", "-k", "0"], "top_k must be at least 1"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], message: str) -> None:
    ran = run_cli(argv)
    assert ran.code == 2
    assert message in ran.err


def test_the_ask_flags_reach_the_settings(tmp_path: Path) -> None:
    ran = run_cli(["ask", "--json", "-k", "3", "--index", str(tmp_path / "none")], stdin="")
    assert ran.code == 0
    assert ran.out == ""
    (settings,) = ran.searchers
    assert settings.retrieval.top_k == 3
    assert settings.store.path == tmp_path / "none"


def test_missing_index_is_an_error_line_per_question_and_the_process_goes_on(
    tmp_path: Path,
) -> None:
    lines = '{"id": 1, "question": "leave"}\n{"id": 2, "question": "loans"}\n'
    ran = run_cli(["ask", "--json", "--index", str(tmp_path / "none")], stdin=lines)
    assert ran.code == 0
    first, second = (json.loads(line) for line in ran.out.splitlines())
    assert (first["id"], second["id"]) == (1, 2)
    assert "ingest" in first["error"]
