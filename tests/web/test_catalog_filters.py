"""The chat's filters accept what the index holds now and name what it does not (D15)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gradio_client import Client

from assistant.config import Settings, UISettings
from assistant.session import Desk
from assistant.types import SearchFilters
from assistant.web.ui import build_demo
from tests.conftest import free_port
from tests.support.served_ui import demo_launched
from tests.support.ui_fakes import FakeService


@pytest.fixture
def filter_app() -> Iterator[tuple[str, FakeService, list[tuple[str, str]]]]:
    """A UI whose catalog grows after start-up, as after an ingest."""
    service = FakeService()
    sources = [("loan-policy.md", "Loan Policy")]
    tags = ["loans"]
    settings = Settings(ui=UISettings(port=free_port()))
    demo = build_demo(
        Desk(service, settings=settings),
        sources=list(sources),
        tags=list(tags),
        catalog=lambda user: (sources, tags + (["hr"] if len(sources) > 1 else [])),
    )
    with demo_launched(demo, settings) as url:
        yield url, service, sources


def test_api_clients_can_filter_on_a_document_ingested_after_start_up(
    filter_app: tuple[str, FakeService, list[tuple[str, str]]],
) -> None:
    """D15: the filter accepts what the index holds now, not what it held at start-up."""
    url, service, sources = filter_app
    sources.append(("hr/new-policy.md", "New Policy"))
    client = Client(url, verbose=False)
    client.predict("Leave?", ["hr/new-policy.md"], ["hr"], 3, api_name="/chat")
    (call,) = service.calls
    assert call.filters == SearchFilters(sources=("hr/new-policy.md",), tags=("hr",))
