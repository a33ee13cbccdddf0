"""A deck file nested absurdly deep is a named problem, not a RecursionError."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from cards.decks import DeckFileError, deck_load
from cards.models import Card, Deck

pytestmark = pytest.mark.django_db


def test_import_deck_names_a_50000_deep_json_file_and_imports_nothing(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"format": 1, "cards": ' + "[" * 50_000 + "]" * 50_000 + "}")
    with pytest.raises(CommandError) as excinfo:
        call_command("import_deck", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    message = str(excinfo.value)
    assert "deep.json: 1 problem(s); nothing was imported." in message
    assert "nest 50001 levels deep; a deck file nests at most 32" in message
    assert not Deck.objects.exists() and not Card.objects.exists()


def test_the_depth_limit_is_32_levels_and_ignores_brackets_in_text():
    inner = "[" * 31 + "]" * 31
    assert deck_load(f'{{"cards": {inner[:30]}{inner[-30:]}}}', name="ok.json") == {
        "cards": json.loads(inner[:30] + inner[-30:])
    }
    with pytest.raises(DeckFileError, match="nest 33 levels"):
        deck_load('{"cards": ' + "[" * 32 + "]" * 32 + "}", name="deep.json")
    prompt = "[[[{{{" * 10_000
    document = deck_load(json.dumps({"cards": [{"prompt": prompt}]}), name="text.json")
    assert document["cards"][0]["prompt"] == prompt
