"""The lesson in deck files: each field checked by the lesson rules, sections created,
updated and deleted by key in the file's order, cards pointing to sections, and export
round-tripping it all."""

from __future__ import annotations

import copy
import io

import pytest

from cards.decks import DeckFileError, deck_dump, deck_export, deck_import, deck_load
from cards.models import Card, Deck, LessonSection

pytestmark = pytest.mark.django_db


def lesson_doc() -> dict:
    return {
        "format": 1,
        "deck": {"slug": "heads", "title": "Heads", "description": ""},
        "lesson": {
            "title": "Attention, step by step",
            "sections": [
                {"key": "objective", "title": "The objective", "body": "Weights for $n = 3$."},
                {
                    "key": "worked-example",
                    "title": "Three tokens by hand",
                    "body": "The weights:\n\n{{figure:worked-example-weights}}\n\nRows sum to 1.",
                },
                {"key": "masks", "title": "Masks", "body": "{{figure:causal-mask}}"},
            ],
        },
        "cards": [
            {
                "key": "why-scale",
                "kind": "recall",
                "prompt": r"Why divide by $\sqrt{d_k}$?",
                "answer": "To keep the softmax responsive.",
                "lesson_section": "worked-example",
            },
            {
                "key": "mask-by-hand",
                "kind": "exercise",
                "prompt": "Mask it.",
                "exercise": {"kind": "attention", "params": {"mask": "causal"}},
                "lesson_section": "masks",
            },
            {"key": "no-section", "kind": "recall", "prompt": "P", "answer": "A"},
        ],
    }


def _errors(doc) -> list[str]:
    with pytest.raises(DeckFileError) as caught:
        deck_import(data=doc)
    assert Deck.objects.count() == 0, "nothing is written when the file has a problem"
    return caught.value.errors


def _section(doc, index: int) -> dict:
    return doc["lesson"]["sections"][index]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda d: _section(d, 2).update(body="{{figure:foo}}"),
            "lesson.sections[2].body: unknown figure 'foo'; expected one of "
            "worked-example-weights, causal-mask, padding-mask, sinusoids",
        ),
        (
            lambda d: _section(d, 0).update(body="See {{figure:sinusoids}} here."),
            "lesson.sections[0].body: a figure goes on a line of its own",
        ),
        (
            lambda d: _section(d, 0).update(body="Broken $x^$ math."),
            "lesson.sections[0].body: math does not render: $x^$",
        ),
        (
            lambda d: _section(d, 0).update(body="  "),
            "lesson.sections[0].body: expected Markdown text, got an empty string",
        ),
        (
            lambda d: _section(d, 0).update(body="x" * 20_001),
            "lesson.sections[0].body: expected at most 20000 characters, got 20001",
        ),
        (
            lambda d: _section(d, 1).update(key="Worked example"),
            "lesson.sections[1].key: expected a slug",
        ),
        (
            lambda d: _section(d, 2).update(key="objective"),
            "lesson.sections[2].key: 'objective' is already the key of lesson.sections[0]",
        ),
        (
            lambda d: _section(d, 0).update(title=""),
            "lesson.sections[0].title: expected text of 1 to 200 characters",
        ),
        (
            lambda d: _section(d, 0).update(title="t" * 201),
            "lesson.sections[0].title: expected text of 1 to 200 characters",
        ),
        (lambda d: _section(d, 0).update(summary="x"), "lesson.sections[0].summary: unknown field"),
        (lambda d: d["lesson"].update(intro="x"), "lesson.intro: unknown field"),
        (lambda d: d["lesson"].update(title=""), "lesson.title: expected text of 1 to 200"),
        (
            lambda d: d["lesson"].update(sections="x"),
            "lesson.sections: expected a list of sections",
        ),
        (
            lambda d: d["lesson"].update(sections=[{"key": f"s{i}"} for i in range(101)]),
            "lesson.sections: expected at most 100 sections, got 101",
        ),
        (
            lambda d: d.update(lesson=[1]),
            "lesson: expected a mapping {title, sections}, got a list",
        ),
        (
            lambda d: d["cards"][0].update(lesson_section="positions"),
            "cards[0].lesson_section: expected null or the key of a section of the deck's "
            "lesson (masks, objective, worked-example), got 'positions'",
        ),
        (
            lambda d: d["cards"][2].update(lesson_section=3),
            "cards[2].lesson_section: expected null or the key of a section",
        ),
    ],
)
def test_each_problem_names_the_section_or_card_and_its_field(mutate, expected):
    doc = lesson_doc()
    mutate(doc)
    errors = _errors(doc)
    assert any(line.startswith(expected) for line in errors), errors


def test_a_card_pointing_to_a_section_that_has_other_problems_is_not_reported_too():
    doc = lesson_doc()
    _section(doc, 1)["title"] = ""
    assert _errors(doc) == [
        "lesson.sections[1].title: expected text of 1 to 200 characters, got ''"
    ]


def test_a_card_section_without_a_lesson_is_refused():
    doc = lesson_doc()
    del doc["lesson"]
    assert _errors(doc) == [
        "cards[0].lesson_section: expected null or the key of a section of the deck's lesson "
        "(none: the deck has no lesson sections), got 'worked-example'",
        "cards[1].lesson_section: expected null or the key of a section of the deck's lesson "
        "(none: the deck has no lesson sections), got 'masks'",
    ]


def _stored() -> list[tuple[str, str, int]]:
    return list(
        LessonSection.objects.filter(deck__slug="heads")
        .order_by("position")
        .values_list("key", "title", "position")
    )


def test_import_creates_the_sections_in_order_and_points_the_cards():
    report = deck_import(data=lesson_doc())
    assert report.sections == (3, 0, 0)
    assert "lesson sections: 3 created, 0 updated, 0 deleted" in report.summary()
    deck = Deck.objects.get(slug="heads")
    assert deck.lesson_title == "Attention, step by step"
    assert _stored() == [
        ("objective", "The objective", 0),
        ("worked-example", "Three tokens by hand", 1),
        ("masks", "Masks", 2),
    ]
    assert dict(Card.objects.values_list("key", "lesson_section")) == {
        "why-scale": "worked-example",
        "mask-by-hand": "masks",
        "no-section": None,
    }


def test_reimport_updates_reorders_and_deletes_by_key_and_keeps_the_rows():
    deck_import(data=lesson_doc())
    ids = dict(LessonSection.objects.values_list("key", "pk"))
    doc = lesson_doc()
    sections = doc["lesson"]["sections"]
    sections[1]["title"] = "Three tokens, by hand"
    doc["lesson"]["sections"] = [sections[1], sections[0]]  # masks dropped, order swapped
    doc["cards"][1]["lesson_section"] = None
    report = deck_import(data=doc)
    assert report.sections == (0, 2, 1)
    assert _stored() == [
        ("worked-example", "Three tokens, by hand", 0),
        ("objective", "The objective", 1),
    ]
    assert dict(LessonSection.objects.values_list("key", "pk")) == {
        key: ids[key] for key in ("worked-example", "objective")
    }
    assert Card.objects.get(key="mask-by-hand").lesson_section is None
    assert deck_import(data=doc).sections == (0, 0, 0), "the same file again changes nothing"


def test_a_card_the_file_does_not_list_loses_a_deleted_section():
    deck_import(data=lesson_doc())
    doc = lesson_doc()
    doc["lesson"]["sections"] = doc["lesson"]["sections"][:2]
    doc["cards"] = [card for card in doc["cards"] if card["key"] != "mask-by-hand"]
    deck_import(data=doc)
    assert Card.objects.get(key="mask-by-hand").lesson_section is None
    assert Card.objects.get(key="why-scale").lesson_section == "worked-example"


def test_a_file_without_a_lesson_leaves_the_deck_without_one():
    deck_import(data=lesson_doc())
    doc = lesson_doc()
    del doc["lesson"]
    for card in doc["cards"]:
        card.pop("lesson_section", None)
    report = deck_import(data=doc)
    assert report.sections == (0, 0, 3)
    assert _stored() == []
    assert Deck.objects.get(slug="heads").lesson_title == ""
    assert set(Card.objects.values_list("lesson_section", flat=True)) == {None}


def test_a_dry_run_reports_the_sections_and_keeps_nothing():
    report = deck_import(data=lesson_doc(), dry_run=True)
    assert report.sections == (3, 0, 0)
    assert LessonSection.objects.count() == 0


def test_export_writes_the_lesson_and_round_trips_through_yaml_and_json():
    deck_import(data=lesson_doc())
    exported = deck_export(deck=Deck.objects.get(slug="heads"))
    assert list(exported) == ["format", "deck", "lesson", "cards"]
    assert exported["lesson"] == lesson_doc()["lesson"]
    assert [card.get("lesson_section") for card in exported["cards"]] == [
        "worked-example",
        "masks",
        None,
    ]
    assert "lesson_section" not in exported["cards"][2], "written only when a card has one"
    for fmt, name in (("yaml", "heads.yaml"), ("json", "heads.json")):
        text = deck_dump(exported, fmt=fmt)
        Deck.objects.all().delete()
        deck_import(data=io.StringIO(text), name=name)
        assert deck_export(deck=Deck.objects.get(slug="heads")) == exported


def test_a_lesson_without_a_title_takes_the_decks_and_exports_without_one():
    doc = lesson_doc()
    del doc["lesson"]["title"]
    deck_import(data=doc)
    exported = deck_export(deck=Deck.objects.get(slug="heads"))
    assert exported["lesson"] == {"sections": doc["lesson"]["sections"]}
    copy_doc = copy.deepcopy(exported)
    assert deck_load(deck_dump(copy_doc)) == exported


def test_a_deck_without_a_lesson_exports_none():
    doc = lesson_doc()
    del doc["lesson"]
    for card in doc["cards"]:
        card.pop("lesson_section", None)
    deck_import(data=doc)
    assert "lesson" not in deck_export(deck=Deck.objects.get(slug="heads"))
