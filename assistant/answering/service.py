"""Answering: rewrite a follow-up, search, build the prompt, stream, check citations.

`Assistant.ask` does the retrieval at once (so the sources are known before
the first token) and returns an `AnswerRun`; iterating the run streams the
answer from the chat model, or from the extractive offline mode when no model
is configured. With a model, every question with a candidate section goes to
the model, even when retrieval judged the match weak (the trace says so), and
the model's "not covered" gets the no-match message naming the closest
sections; only a search with no candidate at all is answered without it.
Offline, the extractive draft is made at once and decides that itself (does any
passage address the question?), with retrieval's verdict only raising its bar.
Model output is neutralised (images, foreign links, HTML) before it leaves this
module.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

from assistant.answering.citations import check_answer
from assistant.answering.claims import ClaimCiter, cite_stream
from assistant.answering.extractive import (
    Draft,
    draft_extractive,
    stream_extractive,
)
from assistant.answering.llm import LENGTH_NOTE, TIME_NOTE, OpenAIChat
from assistant.answering.prompt import Prompt, build_prompt
from assistant.answering.ranking import token_embedder
from assistant.answering.rewrite import Completer, QueryRewriter, Rewrite
from assistant.answering.safety import SafeStream, escape_markdown
from assistant.config import Settings
from assistant.embeddings.late_reader import load_reader
from assistant.errors import LLMError
from assistant.protocols import ChatModel, Embedder, Reader, Searcher
from assistant.tokens import Tokenizer, get_tokenizer
from assistant.types import (
    ANONYMOUS,
    HEADING_SEPARATOR,
    MAX_TURN_CHARS,
    MAX_TURNS,
    Answer,
    Banner,
    Hit,
    Reasoning,
    SearchFilters,
    SearchResult,
    Turn,
    User,
)

__all__ = ["AnswerRun", "Assistant", "build_assistant", "finish", "shown_text"]

logger = logging.getLogger(__name__)

NO_MATCH_OPENING = "The policy documents do not appear to cover this question"
_DELTA = re.compile(r"\S+\s*|\s+")
NO_MATCH_OUTRO = "Try rephrasing, or ask the policy owner directly."
FALLBACK_NOTE = "The language model is not available right now, so this answer quotes the policies."
FALLBACK_LABEL = "Extracted passages (the language model is not available right now):"
# Produces the offline answer instead: its deltas, mode, prompt and search result.
Fallback = Callable[[], tuple[Iterator[str], str, Prompt | None, SearchResult]]
STREAM_FAILED = "The answer stopped because of an unexpected error; try again."
NOT_COVERED_REASON = "the language model found no answer in the closest sections"
# The reasoning kept for the trace; a model that thinks at length is cut here.
MAX_REASONING_CHARS = 20_000
REASONING_CUT = "\n[... reasoning cut at 20,000 characters]"


class AnswerRun:
    """One answer being produced (implements `AnswerStream`).

    ``result``, ``query`` and ``mode`` are set on construction; iterate for safe
    text deltas (once); ``close()`` stops and closes the upstream stream; ``error``
    holds a user-safe message when the model failed part way; ``answer()``
    returns the checked answer once iteration has ended.
    """

    def __init__(
        self,
        *,
        question: str,
        rewrite: Rewrite,
        result: SearchResult,
        prompt: Prompt | None,
        produce: Callable[[], Iterator[str]],
        allowed_hosts: frozenset[str],
        mode: str,
        started: float,
        retrieval_ms: float,
        grounded_only: bool = False,
        fallback: Fallback | None = None,
    ) -> None:
        self.result = result
        self.query = rewrite.query
        self.error = ""
        self._question = question
        self._rewrite = rewrite
        self._prompt = prompt
        self._produce = produce
        self._safe = SafeStream(allowed_hosts=allowed_hosts)
        self._mode = mode
        self._grounded_only = grounded_only
        self._checked: tuple[str, Answer] | None = None
        self._started = started
        self._retrieval_ms = retrieval_ms
        self._first_ms = 0.0
        self._total_ms = 0.0
        self._iterated = False
        self._closed = False
        self._upstream: Iterator[str] | None = None
        self._fallback = fallback
        self._fell_back = ""
        self._reasoning: list[str] = []
        self._reasoning_chars = 0
        self._banner = ""

    def __iter__(self) -> Iterator[str]:
        if self._iterated or self._closed:
            return
        self._iterated = True
        self._upstream = self._produce()
        try:
            yield from self._pump(self._upstream)
            tail = self._safe.finish()
            if tail:
                yield tail
        finally:
            self._close_upstream()
            self._total_ms = _ms_since(self._started)

    def _pump(self, upstream: Iterator[str]) -> Iterator[str]:
        try:
            for delta in upstream:
                if self._closed:
                    return
                if isinstance(delta, Reasoning):
                    # Never answer text: not shown, not checked, not counted as a first token.
                    self._keep_reasoning(delta)
                    continue
                if isinstance(delta, Banner):  # the mode's label: data, not answer text
                    self._banner = delta.strip()
                    continue
                if not self._first_ms:
                    self._first_ms = _ms_since(self._started)
                safe = self._safe.feed(delta)
                if safe:
                    yield safe
        except LLMError as exc:
            if self._fallback is None or self._first_ms or self._closed:
                self.error = str(exc)
                return
            yield from self._answer_offline(exc)
        except Exception:
            # No producer failure may end the chat or its session: the partial
            # answer and its sources stay, with a note (details in the log).
            logger.exception("the answer stream failed")
            self.error = STREAM_FAILED

    def _keep_reasoning(self, delta: str) -> None:
        room = MAX_REASONING_CHARS - self._reasoning_chars
        if room <= 0:
            return
        self._reasoning.append(delta[:room] + (REASONING_CUT if len(delta) > room else ""))
        self._reasoning_chars += len(delta)

    @property
    def banner(self) -> str:
        """Return the label of how the answer is made ("" for a model's own answer)."""
        return self._banner

    @property
    def timings_ms(self) -> dict[str, float]:
        """Return the timings measured so far: retrieval, first token, total."""
        named = {
            "retrieval": self._retrieval_ms,
            "first token": self._first_ms,
            "total": self._total_ms,
        }
        return {name: round(ms) for name, ms in named.items() if ms or name == "retrieval"}

    @property
    def reasoning(self) -> str:
        """Return the model's reasoning so far (raw model text: escape it to show it)."""
        return "".join(self._reasoning).strip()

    def _answer_offline(self, exc: LLMError) -> Iterator[str]:
        """Answer from the passages when the model fails before its first word.

        The user gets the offline answer with a short note; the reason, which names
        settings, goes to the log and the trace for the operator.
        """
        assert self._fallback is not None
        logger.warning("language model failed before answering (%s); answering offline", exc)
        self._fell_back = str(exc)
        deltas, self._mode, self._prompt, self.result = self._fallback()
        self._fallback = None
        self._upstream = _with_fallback_note(deltas)
        yield from self._pump(self._upstream)

    def close(self) -> None:
        """Stop generating and release the upstream connection."""
        self._closed = True
        self._close_upstream()

    def _close_upstream(self) -> None:
        upstream, self._upstream = self._upstream, None
        close = getattr(upstream, "close", None)
        if close is None:
            return
        try:
            close()
        except ValueError:
            # Closed from another thread while a read is in flight: the loop
            # sees ``_closed`` at the next delta and closes it then.
            self._upstream = upstream

    @property
    def first_token_ms(self) -> float:
        """Return the milliseconds from the question to the first answer delta (0: none yet)."""
        return self._first_ms

    @property
    def total_ms(self) -> float:
        """Return the milliseconds from the question to the end of the stream (0: not ended)."""
        return self._total_ms

    @property
    def text(self) -> str:
        """Return the neutralised answer text so far."""
        return self._safe.text

    def answer(self) -> Answer:
        """Return the final answer with checked citations."""
        if self._prompt is None:
            return Answer(self._question, self.text, self.result.hits, citations=())
        # The UI, `mode` and ``ask`` each ask for the answer; check each text once.
        text = self.text
        if self._checked is None or self._checked[0] != text:
            self._checked = (text, self._check(text, self._prompt))
        return self._checked[1]

    def _check(self, text: str, prompt: Prompt) -> Answer:
        # The cut-off notes are ours, not the model's: never flagged, never withheld.
        note = next((n for n in (LENGTH_NOTE, TIME_NOTE) if text.endswith(n)), "")
        answer = check_answer(
            self._question,
            text.removesuffix(note) if note else text,
            prompt.sources,
            offline=self._mode == "extractive",
            grounded_only=self._grounded_only,
        )
        if note:
            answer = replace(answer, text=answer.text + note)
        if answer.not_covered:
            # The model's own "not covered" gets the no-match experience: the plain
            # statement and the closest sections, never a half-answer.
            shown = no_match_message(prompt.sources, reason=NOT_COVERED_REASON)
            return replace(answer, text=shown, citations=(), unsupported_sentences=())
        return answer

    @property
    def mode(self) -> str:
        """Return ``extractive``, ``model`` or ``no good match`` (known once answered)."""
        if self._mode == "model" and self._not_covered():
            return "no good match"
        return self._mode

    def _not_covered(self) -> bool:
        return self._prompt is not None and self._iterated and self.answer().not_covered

    def trace(self) -> tuple[str, ...]:
        """Return lines explaining the rewrite, retrieval, prompt size and timings."""
        lines = [f"question: {self._question}"]
        if self._rewrite.rewritten:
            lines.append(f"rewritten ({self._rewrite.method}): {self.query}")
        lines += list(self.result.trace)
        lines.append(f"mode: {self._mode}")
        if self._fell_back:
            lines.append(f"model failed, answered offline: {self._fell_back}")
        if self._prompt is not None:
            p = self._prompt
            lines.append(
                f"prompt: {p.token_count} tokens, {len(p.sources)} sources "
                f"(dropped {p.dropped_sources} sources, {p.dropped_turns} turns"
                f"{', question truncated' if p.question_truncated else ''})"
            )
        lines.append(f"retrieval: {self._retrieval_ms:.0f} ms")
        if self.reasoning:
            words = len(self.reasoning.split())
            lines.append(f"model reasoning: {words} words (not part of the answer)")
        if self._first_ms:
            lines.append(f"first token: {self._first_ms:.0f} ms")
        if self._total_ms:
            lines.append(f"total: {self._total_ms:.0f} ms")
        if self.error:
            lines.append(f"error: {self.error}")
        return tuple(lines)


class Assistant:
    """Answers questions about the policies (implements `ChatService`).

    Args:
        searcher: Finds the hits for a query.
        model: The chat model; ``None`` selects the extractive offline mode.
        settings: Supplies the prompt budget, top-k and the UI host (the only
            host model output may link to).
        tokenizer: Counts prompt tokens.
        rewriter: Rewrites follow-ups; by default uses ``model`` when it can
            complete, else the offline heuristic.
        embedder: Embeds the question and the candidate passages of the offline
            mode (the one the index was built with); without it offline answers
            are ranked by words and headings only. It also ranks the sources
            that support a model's claims (`assistant.answering.claims`).
        reader: Reads the question against the offline mode's passages: its
            probabilities decide whether they answer (`answering.answerability`);
            with a model, it ranks the sources that support a claim instead of the embedder.
    """

    def __init__(
        self,
        searcher: Searcher,
        *,
        model: ChatModel | None,
        settings: Settings,
        tokenizer: Tokenizer,
        rewriter: QueryRewriter | None = None,
        embedder: Embedder | None = None,
        reader: Reader | None = None,
    ) -> None:
        self._searcher = searcher
        self._embedder = embedder
        self._reader = reader
        self._model = model
        self._settings = settings
        self._tokenizer = tokenizer
        completer = model if isinstance(model, Completer) else None
        self._rewriter = rewriter or QueryRewriter(completer=completer)
        self._allowed_hosts = frozenset({settings.ui.host.lower()})

    def ask(
        self,
        question: str,
        history: Sequence[Turn] = (),
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        user: User = ANONYMOUS,
    ) -> AnswerRun:
        """Search for ``question`` now and return a run that streams the answer.

        Raises:
            AssistantError: Retrieval failed (for example, no index yet).
        """
        started = time.perf_counter()
        turns = clean_history(history)
        rewrite = self._rewriter.rewrite(question, turns)
        result = self._searcher.search(rewrite.query, k=k, filters=filters, user=user)
        if rewrite.rewritten:
            result = _own_words_only(result, question)
        retrieval_ms = _ms_since(started)
        logger.info(
            "retrieved %d hits in %.0f ms (no_good_match=%s, rewritten=%s)",
            len(result.hits),
            retrieval_ms,
            result.no_good_match,
            rewrite.method,
        )
        prompt: Prompt | None = None
        fallback: Fallback | None = None
        produce = _fixed_text(no_match_message(result.hits, reason=result.no_match_reason))
        mode = "no good match"
        if result.hits:
            prompt = build_prompt(
                _prompt_question(question, rewrite),
                result.hits,
                turns,
                budget=self._settings.retrieval.context_tokens,
                tokenizer=self._tokenizer,
            )
            if self._model is None:
                produce, mode, prompt, result = self._offline(
                    rewrite.query, prompt, result, added=rewrite.added
                )
            else:
                produce, mode = self._producer(question, prompt), "model"
                fallback = self._fallback_to_offline(rewrite.query, prompt, result)
                result = _for_the_model(result)
        return AnswerRun(
            question=question,
            rewrite=rewrite,
            result=result,
            prompt=prompt,
            produce=produce,
            allowed_hosts=self._allowed_hosts,
            mode=mode,
            started=started,
            retrieval_ms=retrieval_ms,
            grounded_only=self._settings.llm.grounded_only,
            fallback=fallback,
        )

    def _fallback_to_offline(self, query: str, prompt: Prompt, result: SearchResult) -> Fallback:
        def fallback() -> tuple[Iterator[str], str, Prompt | None, SearchResult]:
            produce, mode, offline_prompt, offline_result = self._offline(query, prompt, result)
            return produce(), mode, offline_prompt, offline_result

        return fallback

    def _offline(
        self, query: str, prompt: Prompt, result: SearchResult, *, added: Sequence[str] = ()
    ) -> tuple[Callable[[], Iterator[str]], str, Prompt | None, SearchResult]:
        """Draft the extractive answer now; it decides "not covered" from what it could quote.

        Retrieval's verdict only raises the bar: a passage close enough to the
        question is quoted even when retrieval doubted its hits. The returned
        result carries the answer's verdict, so the sources panel and
        ``no_good_match`` agree with the text.
        """
        draft = draft_extractive(
            query,
            prompt.sources,
            embedder=self._embedder,
            unknown_words=result.unknown_words,
            retrieval_matched=not result.no_good_match,
            added=added,
            reader=self._reader,
        )
        if draft.covered or draft.hedged:
            answered = replace(result, no_good_match=False, no_match_reason="")
            return _drafted(draft), "extractive", prompt, answered
        reason = result.no_match_reason or draft.reason
        refused = replace(result, no_good_match=True, no_match_reason=reason)
        text = no_match_message(result.hits, reason=reason)
        return _fixed_text(text), "no good match", None, refused

    def _producer(self, question: str, prompt: Prompt) -> Callable[[], Iterator[str]]:
        model = self._model
        assert model is not None
        if not self._settings.llm.cite_claims:
            return lambda: model.stream(prompt.as_dicts())
        # Each claim is cited as it ends, whatever markers the model wrote (or did not).
        citer = ClaimCiter(question, prompt.sources, embedder=self._embedder, reader=self._reader)
        return lambda: cite_stream(model.stream(prompt.as_dicts()), citer)


def build_assistant(
    settings: Settings, *, searcher: Searcher, embedder: Embedder | None = None
) -> Assistant:
    """Return an assistant using the configured chat model, or the offline mode.

    Args:
        settings: All settings (model, prompt budget, UI host).
        searcher: Finds the hits for a query.
        embedder: The embedding model the index was built with; the offline mode
            ranks passages by their meaning with it.
    """
    model = OpenAIChat(settings.llm) if settings.llm.enabled else None
    logger.info("answer mode: %s", "model " + settings.llm.model if model else "extractive")
    return Assistant(
        searcher,
        model=model,
        settings=settings,
        tokenizer=get_tokenizer(settings.chunking.encoding),
        embedder=embedder,
        reader=_reader(settings, embedder) if model is None else None,
    )


def _reader(settings: Settings, embedder: Embedder | None) -> Reader | None:
    """Return the shipped reader over the packaged embedder's word pieces, if it reads them."""
    if not settings.embedding.reader or embedder is None:
        return None
    tokens = token_embedder(embedder)
    return load_reader(tokens) if tokens is not None else None


def shown_text(answer: Answer, *, streamed: str, error: str = "") -> str:
    """Return the answer text the chat shows once streaming has ended.

    That is the checked text (markers to missing sources removed), or what
    streamed if the check left nothing, followed by the model's error note if
    it failed part way. The web chat and ``python -m assistant ask`` both use it.
    """
    body = answer.text if answer.text.strip() else streamed
    if error:
        body += f"\n\n*{error}*"
    return body or "(no answer)"


def finish(run: AnswerRun) -> tuple[Answer, str]:
    """Stream ``run`` to its end; return the checked answer and the text the chat shows."""
    try:
        for _ in run:
            pass
    finally:
        run.close()
    answer = run.answer()
    return answer, shown_text(answer, streamed=run.text, error=run.error)


def clean_history(history: Sequence[Turn]) -> tuple[Turn, ...]:
    """Return the newest ``MAX_TURNS`` valid turns, each cut to ``MAX_TURN_CHARS``."""
    turns = [
        Turn(turn.role, turn.text[:MAX_TURN_CHARS])
        for turn in history
        if isinstance(turn, Turn) and turn.role in ("user", "assistant") and turn.text.strip()
    ]
    return tuple(turns[-MAX_TURNS:])


def no_match_message(hits: Sequence[Hit], *, reason: str = "") -> str:
    """Return the fixed answer given when retrieval finds nothing good enough.

    Args:
        hits: The closest sections, listed so the user can look for themselves.
        reason: Why, in plain words (`SearchResult.no_match_reason`), or "".
    """
    why = f" ({escape_markdown(reason)})" if reason else ""
    if not hits:
        return f"{NO_MATCH_OPENING}{why}. {NO_MATCH_OUTRO}"
    intro = f"{NO_MATCH_OPENING}{why}, so I will not guess. The closest sections I found are:"
    # Titles and headings are document text: shown as text, never as Markdown.
    lines = [
        f"- {escape_markdown(hit.title)}: {HEADING_SEPARATOR.join(map(escape_markdown, path))}"
        for hit in hits[:5]
        for path in [hit.chunk.heading_path]
    ]
    return "\n".join([intro, "", *lines, "", NO_MATCH_OUTRO])


_QUOTED = re.compile(r"“([^”]+)”")


def _own_words_only(result: SearchResult, question: str) -> SearchResult:
    """Return ``result`` with no note naming a word the user did not type in this turn.

    A rewritten query carries words of an earlier question; "no document uses 'asdkj'"
    under a question that never said it reads as nonsense (issue 39).
    """
    typed = {word.lower() for word in re.findall(r"[^\W_]+", question)}
    unknown = tuple(w for w in result.unknown_words if w.lower() in typed)
    reason = result.no_match_reason
    named = [
        w.lower() for phrase in _QUOTED.findall(reason) for w in re.findall(r"[^\W_]+", phrase)
    ]
    if any(w not in typed for w in named):
        reason = "the closest sections cover too little of the question"
    return replace(result, unknown_words=unknown, no_match_reason=reason)


def _prompt_question(question: str, rewrite: Rewrite) -> str:
    """Return the question the model is asked: a follow-up as the model itself rewrote it.

    The sources were retrieved for the rewritten question, so the model reads that
    one (the conversation stays in the prompt). The offline rewrite is a bag of
    words and leaves the user's own words.
    """
    return rewrite.query if rewrite.method == "llm" else question


def _for_the_model(result: SearchResult) -> SearchResult:
    """Return ``result`` as one the model answers from, even when retrieval judged it weak.

    With a model configured, retrieval's "no good match" no longer refuses by itself:
    its paraphrase signals refuse answerable questions, while a model that reads the
    sources says "not covered" reliably (docs/answer-eval.md, "Oracle"). One more
    model call for a truly unanswerable question is the price of never refusing an
    answerable one; the model's "not covered" gets the no-match message.
    """
    if not result.no_good_match:
        return result
    weak = f"weak match ({result.no_match_reason or 'retrieval doubted its hits'}): "
    note = weak + "the closest sections went to the model, which decides whether they answer"
    return replace(result, no_good_match=False, no_match_reason="", trace=(*result.trace, note))


def _with_fallback_note(deltas: Iterator[str]) -> Iterator[str]:
    """Yield ``deltas`` with a note that the model could not answer at the start.

    The offline answer's label becomes the fallback's; an answer without one gets the
    note as its first paragraph.
    """
    first = True
    for delta in deltas:
        if first and isinstance(delta, Banner):
            yield Banner(FALLBACK_LABEL)
        elif first:
            yield f"*{FALLBACK_NOTE}*\n\n{delta}"
        else:
            yield delta
        first = False


def _drafted(draft: Draft) -> Callable[[], Iterator[str]]:
    return lambda: stream_extractive("", (), draft=draft)


def _fixed_text(text: str) -> Callable[[], Iterator[str]]:
    return lambda: iter(_DELTA.findall(text))


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000
