"""The .apkg download is built once per deck version; its description is sanitised."""

from __future__ import annotations

import io
import json
import sqlite3
import zipfile
from pathlib import Path

import pytest
from django.core.cache import cache

from cards import anki
from cards.decks import deck_export, deck_import
from cards.models import Card, Deck, Tag
from cards.services.cards import cards_set_active

pytestmark = pytest.mark.django_db
URL = "/api/v1/decks/cached/export.apkg"


@pytest.fixture
def deck():
    deck = Deck.objects.create(slug="cached", title="Cached", description="Heads **by hand**")
    first = Card.objects.create(deck=deck, key="one", prompt="Why scale?", answer="Variance")
    Card.objects.create(deck=deck, key="two", prompt="What is a head?", answer="One attention")
    tag = Tag.objects.create(name="basics")
    first.tags.add(tag)
    return deck


@pytest.fixture
def builds(monkeypatch):
    """How many times a package was built."""
    count = {"n": 0}
    build = anki.deck_package

    def counting(*, deck):
        count["n"] += 1
        return build(deck=deck)

    monkeypatch.setattr(anki, "deck_package", counting)
    return count


def _download(api) -> bytes:
    response = api.get(URL)
    assert response.status_code == 200
    return response.content


def test_a_second_download_is_not_rebuilt(api, other_api, deck, builds):
    first = _download(api)
    assert builds["n"] == 1
    assert _download(api) == first
    assert _download(other_api) == first
    assert builds["n"] == 1


def _edit_card(deck):
    card = deck.cards.get(key="two")
    card.answer = "One attention, with its own weights"
    card.save()  # what the admin's change form does


def _edit_deck(deck):
    deck.description = "Heads, worked **by hand**"
    deck.save()


def _rename_tag(deck):
    Tag.objects.filter(name="basics").update(name="first-steps")


def _deactivate(deck):
    cards_set_active(card_ids=[deck.cards.get(key="two").pk], active=False)


def _reimport(deck):
    document = deck_export(deck=deck)
    document["cards"][0]["prompt"] = "Why divide by the root of d_k?"
    report = deck_import(data=document)
    assert report.updated >= 1


@pytest.mark.parametrize("edit", [_edit_card, _edit_deck, _rename_tag, _deactivate, _reimport])
def test_any_edit_gives_a_fresh_package(api, deck, builds, edit):
    first = _download(api)
    edit(deck)
    deck.refresh_from_db()
    second = _download(api)
    assert builds["n"] == 2
    assert second != first
    assert _download(api) == second
    assert builds["n"] == 2


def test_a_failing_cache_costs_a_rebuild_not_the_download(api, deck, builds, monkeypatch):
    def down(*args, **kwargs):
        raise ConnectionError("cache unreachable")

    monkeypatch.setattr(cache, "get", down)
    monkeypatch.setattr(cache, "set", down)
    assert _download(api)[:2] == b"PK"
    assert _download(api)[:2] == b"PK"
    assert builds["n"] == 2


def _deck_description(data: bytes, tmp_path: Path) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        path = tmp_path / "collection.anki2"
        path.write_bytes(archive.read("collection.anki2"))
    decks = json.loads(sqlite3.connect(path).execute("SELECT decks FROM col").fetchone()[0])
    (description,) = [d["desc"] for d in decks.values() if d["name"] == "Cached"]
    return description


def test_the_deck_description_is_sanitised_like_the_card_fields(api, deck, tmp_path):
    deck.description = (
        '**Heads** <script>alert(1)</script><img src="x" onerror="alert(2)">'
        '<a href="javascript:alert(3)">more</a>'
    )
    deck.save()
    description = _deck_description(_download(api), tmp_path)
    assert "<strong>Heads</strong>" in description
    assert "<script" not in description and "alert(1)" not in description
    assert "onerror" not in description and "javascript:" not in description
