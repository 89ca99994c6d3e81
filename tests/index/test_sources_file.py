"""A connector's `.sources.json`: the title, link and audience of files it put in a folder."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from assistant.config import Settings, StoreSettings
from assistant.documents.loading import load_document
from assistant.index.chroma import ChromaIndex
from assistant.index.ingest import ingest
from assistant.session.visibility import may_open_now
from assistant.types import SIGNED_IN, DocMeta, User
from tests.conftest import FakeEmbedder

PUBLIC_BY_FRONT_MATTER = "---\naudience: everyone\n---\n# Pay\n\nSalaries are paid monthly.\n"


def _docs(settings: Settings, embedder: FakeEmbedder) -> dict[str, DocMeta]:
    index = ChromaIndex(
        settings.store, embedder_identity=embedder.identity, dimension=embedder.dimension
    )
    return dict(index.load_snapshot().docs)


def _folder(tmp_path: Path, sources: object) -> Path:
    root = tmp_path / "mirror"
    (root / "d").mkdir(parents=True)
    (root / "d" / "ITEM1.md").write_text(PUBLIC_BY_FRONT_MATTER, encoding="utf-8")
    (root / "d" / "ITEM2.md").write_text("No heading, only a rule.\n", encoding="utf-8")
    (root / ".sources.json").write_text(json.dumps(sources), encoding="utf-8")
    return root


def test_the_sources_file_decides_the_audience_title_and_link(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    root = _folder(
        tmp_path,
        {
            "d/ITEM1.md": {"title": "Pay", "url": "https://sp.example/Pay.md", "audience": ["hr"]},
            "d/ITEM2.md": {"title": "Rules", "url": "https://sp.example/Rules.md"},
        },
    )
    settings = replace(Settings(), store=StoreSettings(path=tmp_path / "index"))

    ingest([root], settings=settings, embedder=fake_embedder)

    docs = _docs(settings, fake_embedder)
    assert docs["d/ITEM1.md"].audience == ("hr",)  # not everyone, as the front matter said
    assert docs["d/ITEM1.md"].url == "https://sp.example/Pay.md"
    assert docs["d/ITEM2.md"].title == "Rules"  # the file's name, not "Item2"
    document = load_document(root / "d" / "ITEM1.md", root=root)
    file = root / "d" / "ITEM1.md"
    eve, hana = User(name="eve"), User(name="h", groups=frozenset({"hr"}))
    assert not may_open_now(document, file=file, root=root, user=eve, default_audience=())
    assert may_open_now(document, file=file, root=root, user=hana, default_audience=())


def test_a_changed_entry_alone_relabels_the_document(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    root = _folder(tmp_path, {"d/ITEM1.md": {"audience": ["hr"]}})
    settings = replace(Settings(), store=StoreSettings(path=tmp_path / "index"))
    ingest([root], settings=settings, embedder=fake_embedder)
    (root / ".sources.json").write_text(json.dumps({"d/ITEM1.md": {"audience": ["finance"]}}))

    report = ingest([root], settings=settings, embedder=fake_embedder)

    assert report.changed == ("d/ITEM1.md",)
    assert _docs(settings, fake_embedder)["d/ITEM1.md"].audience == ("finance",)


def test_a_malformed_sources_file_stores_nothing_from_its_folder(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    root = _folder(tmp_path, {"d/ITEM1.md": {"audience": ["not a group!"]}})
    settings = replace(Settings(), store=StoreSettings(path=tmp_path / "index"))

    report = ingest([root], settings=settings, embedder=fake_embedder)

    assert report.added == ()
    assert {p.source for p in report.problems} == {"d/ITEM1.md", "d/ITEM2.md"}


def test_sign_in_names_and_signed_in_open_documents_to_the_right_users() -> None:
    ann = User(name="Ann@Contoso.example")
    assert ann.may_read(("ann@contoso.example",))
    assert not User(name="bob@contoso.example").may_read(("ann@contoso.example",))
    assert not User(name="ann").may_read(("ann",))  # a group name is not a user's name
    assert ann.may_read((SIGNED_IN,))
    assert not User().may_read((SIGNED_IN,))
