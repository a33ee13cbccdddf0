"""Deck files as a content author writes them: every mistake is named and nothing is imported."""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest
import yaml
from django.core.management import CommandError, call_command

from cards.decks import DeckFileError, deck_dump, deck_export, deck_import, deck_load
from cards.models import Card, Deck, Enrollment, ReviewState, Tag

pytestmark = pytest.mark.django_db

GOOD_YAML = """\
format: 1
deck:
  slug: toy
  title: Toy
cards:
  - key: why-scale
    kind: recall
    prompt: Why divide by $\\sqrt{d_k}$?
    answer: To keep the softmax out of saturation.
    tags: [scaling]
  - key: by-hand
    kind: exercise
    prompt: Attention by hand.
    exercise: {kind: attention, params: {n: 3}}
"""


def _counts() -> tuple[int, int, int]:
    return Deck.objects.count(), Card.objects.count(), Tag.objects.count()


def _import_file(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CommandError) as excinfo:
        call_command("import_deck", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    return str(excinfo.value)


# --- duplicate keys within one mapping -----------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        # A card whose prompt is written twice: the first must not vanish silently.
        (
            "    answer: To keep",
            "    prompt: Why scale?\n    answer: To keep",
            "cards[0].prompt: given twice (lines 8 and 9)",
        ),
        (
            "  title: Toy\n",
            "  title: Toy\n  slug: other\n",
            "deck.slug: given twice (lines 3 and 5)",
        ),
        ("{n: 3}", "{n: 3, n: 4}", "cards[1].exercise.params.n: given twice (lines 14 and 14)"),
        ("cards:\n", "format: 1\ncards:\n", "format: given twice (lines 1 and 5)"),
    ],
)
def test_a_key_written_twice_in_yaml_is_an_error_naming_entry_and_field(
    tmp_path, old, new, message
):
    assert old in GOOD_YAML
    text = GOOD_YAML.replace(old, new, 1)
    before = _counts()

    with pytest.raises(DeckFileError) as excinfo:
        deck_load(text, name="deck.yaml")
    assert any(error.startswith(message) for error in excinfo.value.errors), excinfo.value.errors

    assert message in _import_file(tmp_path, "deck.yaml", text)
    assert _counts() == before


def test_a_key_written_twice_in_json_is_an_error_naming_entry_and_field():
    text = (
        '{"format": 1, "deck": {"slug": "toy", "title": "Toy"},'
        ' "cards": [{"kind": "recall", "prompt": "P", "answer": "A", "answer": "B"}]}'
    )
    with pytest.raises(DeckFileError) as excinfo:
        deck_load(text, name="deck.json")
    assert excinfo.value.errors == ["cards[0].answer: given more than once; keep one"]
    assert not Card.objects.exists()


def test_a_repeated_key_in_different_mappings_is_fine():
    doc = deck_load(GOOD_YAML, name="deck.yaml")
    assert [card["key"] for card in doc["cards"]] == ["why-scale", "by-hand"]
    assert deck_import(data=GOOD_YAML, name="deck.yaml").created == 2


# --- files that are not a deck at all -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("empty.yaml", "", "the file is empty; expected a mapping with format, deck and cards"),
        ("blank.yaml", "\n  \n# only a comment\n", "the file is empty; expected a mapping"),
        ("empty.json", "", "the file is empty; expected a mapping with format, deck and cards"),
        ("list.yaml", "- 1\n- 2\n", "expected a mapping with format, deck and cards, got a list"),
        ("list.json", "[1, 2]", "expected a mapping with format, deck and cards, got a list"),
        ("text.yaml", "just some words\n", "expected a mapping with format, deck and cards, got a"),
        ("syntax.yaml", "format: 1\ndeck: [\n", "not valid YAML: line 3 column 1"),
    ],
)
def test_a_file_that_is_not_a_deck_names_the_problem_in_the_command(tmp_path, name, text, message):
    before = _counts()
    output = _import_file(tmp_path, name, text)
    assert "nothing was imported" in output
    assert message in output
    assert "NoneType" not in output
    assert _counts() == before


def test_a_utf8_file_with_a_byte_order_mark_imports(tmp_path):
    text = json.dumps(deck_load(GOOD_YAML, name="deck.yaml"))
    for name, body in (("deck.json", text), ("deck.yaml", GOOD_YAML), ("deck", text)):
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))
        assert deck_load(path)["deck"]["slug"] == "toy"
        assert deck_load(path.read_bytes(), name=name)["deck"]["slug"] == "toy"


# --- text the database cannot store ---------------------------------------------------------------


def test_a_nul_character_is_named_not_a_database_error(tmp_path):
    doc = deck_load(GOOD_YAML, name="deck.yaml")
    doc["cards"][0]["answer"] = "To keep\x00 the softmax sane."
    doc["deck"]["description"] = "Pasted\x00 from a PDF"
    before = _counts()

    with pytest.raises(DeckFileError) as excinfo:
        deck_import(data=doc)

    assert excinfo.value.errors == [
        "deck.description: contains a NUL character (\\x00); remove it",
        "cards[0].answer: contains a NUL character (\\x00); remove it",
    ]
    assert _counts() == before


# --- what is fine: checked end to end -------------------------------------------------------------


def test_reimport_with_edited_text_reactivation_and_deactivate_missing_keeps_progress(
    make_user,
):
    learner = make_user("ada")
    deck_import(data=GOOD_YAML, name="deck.yaml")
    deck = Deck.objects.get(slug="toy")
    Enrollment.objects.create(learner=learner, deck=deck)
    recall = Card.objects.get(key="why-scale")
    ReviewState.objects.create(learner=learner, card=recall, step=3, due_on=dt.date(2026, 4, 1))

    doc = deck_load(GOOD_YAML, name="deck.yaml")
    doc["cards"][0]["answer"] = "So the scores keep unit variance."
    doc["cards"] = doc["cards"][:1]  # by-hand no longer listed
    report = deck_import(data=doc, deactivate_missing=True)
    assert (report.updated, report.deactivated) == (1, 1)
    assert not Card.objects.get(key="by-hand").is_active
    assert ReviewState.objects.get(card=recall).step == 3
    assert Card.objects.get(pk=recall.pk).answer == "So the scores keep unit variance."

    report = deck_import(data=GOOD_YAML, name="deck.yaml", deactivate_missing=True)
    assert (report.updated, report.deactivated) == (2, 0)
    assert Card.objects.get(key="by-hand").is_active
    assert ReviewState.objects.get(card=recall).step == 3
    again = deck_import(data=GOOD_YAML, name="deck.yaml", deactivate_missing=True)
    assert (again.created, again.updated, again.unchanged, again.deactivated) == (0, 0, 2, 0)


def test_awkward_text_survives_export_and_import_through_yaml():
    texts = [
        "trailing spaces  \nnext",
        "  leading spaces\nnext",
        "\nstarts with a newline",
        "ends with blank lines\n\n",
        "tab\tinside\nand $x_1$",
        "- looks like a list\nkey: looks like a mapping\n# and a comment",
        "yes",
        "Überraschung — ünïcödé\nzweite Zeile",
    ]
    doc = {
        "format": 1,
        "deck": {"slug": "awkward", "title": "Awkward", "description": "two\nlines"},
        "cards": [
            {"key": f"c{i}", "kind": "recall", "prompt": text, "answer": text}
            for i, text in enumerate(texts)
        ],
    }
    deck_import(data=doc)
    exported = deck_export(deck=Deck.objects.get(slug="awkward"))
    text = deck_dump(exported, fmt="yaml")
    assert yaml.safe_load(text) == exported
    Deck.objects.all().delete()
    deck_import(data=text, name="awkward.yaml")
    assert deck_export(deck=Deck.objects.get(slug="awkward")) == exported
    assert [c["prompt"] for c in exported["cards"]] == texts
