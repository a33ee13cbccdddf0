"""The lesson through the API and the card API, its rendering, and figures whose numbers
are the engine's."""

from __future__ import annotations

import datetime as dt
import html
import re

import numpy as np
import pytest
import time_machine
from django.utils import timezone

from cards import lesson, services
from cards.decks import deck_import
from cards.figures import FIGURES, figure_html, padded_batch, sinusoids, worked_example
from cards.models import Card, Deck
from cards.renderers import due_items
from cards.serializers import CardSerializer
from exercises import engine
from exercises.presets import PRESETS

from .test_lesson_deck_file import lesson_doc

pytestmark = pytest.mark.django_db
LESSON = "/api/v1/decks/heads/lesson/"


@pytest.fixture
def heads() -> Deck:
    doc = lesson_doc()
    doc["cards"].append(
        {
            "key": "projection",
            "kind": "exercise",
            "prompt": "Project the lesson's tokens.",
            "exercise": {"kind": "projection", "params": {"preset": "lesson"}},
            "lesson_section": "worked-example",
        }
    )
    doc["cards"].append(
        {
            "key": "lab-attention",
            "kind": "lab",
            "prompt": "Write attention.",
            "lab": "attention",
            "lesson_section": "masks",
        }
    )
    doc["cards"].append(
        {
            "key": "retired",
            "kind": "recall",
            "prompt": "Old.",
            "answer": "Old.",
            "active": False,
            "lesson_section": "objective",
        }
    )
    deck_import(data=doc)
    return Deck.objects.get(slug="heads")


def _ids(*keys: str) -> list[int]:
    by_key = dict(Card.objects.values_list("key", "pk"))
    return [by_key[key] for key in keys]


# --- GET decks/{slug}/lesson/ ------------------------------------------------------------


def test_a_learner_not_enrolled_reads_the_lesson_with_what_practises_each_section(api, heads):
    r = api.get(LESSON)
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["deck"] == "heads" and body["title"] == "Attention, step by step"
    assert [(s["key"], s["title"]) for s in body["sections"]] == [
        ("objective", "The objective"),
        ("worked-example", "Three tokens by hand"),
        ("masks", "Masks"),
    ]
    assert body["sections"][1]["body"] == lesson_doc()["lesson"]["sections"][1]["body"]
    objective, worked, masks = (s["practice"] for s in body["sections"])
    # An inactive card practises nothing.
    assert objective == {"cards": [], "exercise_kinds": [], "presets": [], "labs": []}
    why_scale, projection = _ids("why-scale", "projection")
    assert worked == {
        "cards": [
            {"id": why_scale, "key": "why-scale", "kind": "recall"},
            {"id": projection, "key": "projection", "kind": "exercise"},
        ],
        "exercise_kinds": ["projection"],
        "presets": ["bag"],
        "labs": [],
    }
    assert masks["exercise_kinds"] == ["attention"] and masks["labs"] == ["attention"]
    assert [c["key"] for c in masks["cards"]] == ["mask-by-hand", "lab-attention"]


def test_the_lesson_needs_credentials_and_a_known_deck(anon_api, api, heads):
    assert anon_api.get(LESSON).status_code == 401
    r = api.get("/api/v1/decks/no-such-deck/lesson/")
    assert r.status_code == 404 and r.json() == {"detail": "No such deck."}


def test_a_deck_without_a_lesson_answers_its_title_and_no_sections(api):
    Deck.objects.create(slug="plain", title="Plain")
    assert api.get("/api/v1/decks/plain/lesson/").json() == {
        "deck": "plain",
        "title": "Plain",
        "sections": [],
    }


def test_the_lesson_is_in_the_schema(api):
    schema = api.get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/v1/decks/{slug}/lesson/"]["get"]
    assert {"200", "401", "404"} <= set(operation["responses"])
    section = schema["components"]["schemas"]["LessonSection"]
    assert set(section["properties"]) == {"key", "title", "body", "practice"}


@pytest.mark.parametrize(
    ("params", "preset"),
    [
        ({"preset": "lesson"}, "bag"),
        ({"preset": "lesson", "mask": "causal"}, "causal"),
        ({"preset": "large"}, "large"),
        ({"preset": "random"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_the_playground_preset_an_exercise_starts_from(params, preset):
    assert lesson.playground_preset(params) == preset
    assert preset is None or preset in PRESETS


# --- A card's lesson_section in the card API and the due queue ------------------------------


def test_cards_carry_their_section_in_cards_and_in_the_due_queue(api, learner, heads):
    card = Card.objects.get(key="why-scale")
    assert api.get(f"/api/v1/cards/{card.pk}/").json()["lesson_section"] == "worked-example"
    no_section = Card.objects.get(key="no-section")
    assert api.get(f"/api/v1/cards/{no_section.pk}/").json()["lesson_section"] is None
    start = dt.datetime(2026, 3, 2, 12, tzinfo=dt.UTC)
    with time_machine.travel(start, tick=False):
        services.enroll(learner=learner, deck=heads, at=timezone.now())
        learner.review_states.update(due_on=timezone.localdate())
        body = api.get("/api/v1/reviews/due/?page_size=100").json()
    by_key = {item["card"]["key"]: item["card"] for item in body["results"]}
    assert by_key["why-scale"]["lesson_section"] == "worked-example"
    assert by_key["no-section"]["lesson_section"] is None
    expected = {c["key"]: dict(c) for c in CardSerializer(heads.cards.all(), many=True).data}
    for key, rendered in by_key.items():
        assert rendered == expected[key], key


def test_the_fast_renderer_passes_the_section_through():
    row = {
        "card_id": 1,
        "card__deck__slug": "d",
        "card__key": "k",
        "card__kind": "recall",
        "card__prompt": "P",
        "card__answer": "A",
        "tag_names": [],
        "card__exercise": None,
        "card__lab": None,
        "card__points": [],
        "card__lesson_section": "masks",
        "card__position": 0,
        "card__is_active": True,
        "card__created_at": timezone.now(),
        "card__updated_at": timezone.now(),
        "step": 0,
        "due_on": dt.date(2026, 3, 2),
        "leech": False,
    }
    assert due_items([row], exercises={})[0]["card"]["lesson_section"] == "masks"


def test_staff_set_a_section_of_the_cards_deck_and_nothing_else(staff_api, heads):
    card = Card.objects.get(key="no-section")
    url = f"/api/v1/cards/{card.pk}/"
    r = staff_api.patch(url, {"lesson_section": "masks"}, format="json")
    assert r.status_code == 200 and r.json()["lesson_section"] == "masks"
    r = staff_api.patch(url, {"lesson_section": "positions"}, format="json")
    assert r.status_code == 400
    assert r.json() == {
        "lesson_section": [
            "Expected null or the key of a section of the deck's lesson "
            "(objective, worked-example, masks), got 'positions'."
        ]
    }
    r = staff_api.patch(url, {"lesson_section": 7}, format="json")
    assert r.status_code == 400 and "lesson_section" in r.json()
    other = Deck.objects.create(slug="other", title="Other")
    r = staff_api.patch(url, {"deck": other.slug}, format="json")
    assert r.status_code == 400 and "none: the deck has no lesson sections" in str(r.json())
    r = staff_api.patch(url, {"lesson_section": None}, format="json")
    assert r.status_code == 200 and r.json()["lesson_section"] is None
    card.refresh_from_db()
    assert card.lesson_section is None and card.deck_id == heads.pk


def test_a_patch_of_an_exercise_without_its_kind_is_a_400_naming_it(staff_api, heads):
    card = Card.objects.get(key="mask-by-hand")
    r = staff_api.patch(f"/api/v1/cards/{card.pk}/", {"exercise": {"params": {}}}, format="json")
    assert r.status_code == 400
    assert list(r.json()) == ["exercise"] and list(r.json()["exercise"]) == ["kind"]
    card.refresh_from_db()
    assert card.exercise == {"kind": "attention", "params": {"mask": "causal"}}


# --- Rendering and figures ------------------------------------------------------------------


def test_a_body_renders_its_markdown_math_and_figures():
    out = str(lesson.render_body("Some *text* and $x^2$.\n\n{{figure:sinusoids}}\n\nAfter."))
    assert "<em>text</em>" in out and "<math" in out
    assert out.index("<em>") < out.index('data-figure="sinusoids"') < out.index("After.")
    assert "{{figure" not in out


def test_a_bodys_formulas_drop_the_attributes_html_implies():
    out = str(lesson.render_body("Inline $n$ and\n\n$$QK^\\top$$\n"))
    assert "<math><mi>n</mi></math>" in out.replace("<mrow>", "").replace("</mrow>", "")
    assert '<span class="scroll-x math-block"><math display="block">' in out
    assert "xmlns" not in out


def test_a_body_cannot_inject_markup():
    out = str(lesson.render_body("<script>alert(1)</script>\n\n{{figure:causal-mask}}"))
    assert "<script" not in out


def _heat_cells(fragment: str) -> list[list[float]]:
    """The numbers of the first heat map in ``fragment``, row by row."""
    table = re.search(r'<table class="data heatmap".*?</table>', fragment, re.S)
    assert table is not None
    rows = re.findall(r"<tr><th scope=\"row\">.*?</tr>", table.group(0), re.S)
    return [
        [
            float(html.unescape(v).replace("\N{MINUS SIGN}", "-"))
            for v in re.findall(r"<td[^>]*>([^<]*)</td>", row)
        ]
        for row in rows
    ]


def test_the_worked_example_heat_map_shows_the_engines_weights():
    shown = _heat_cells(str(figure_html("worked-example-weights")))
    m = PRESETS["bag"]["matrices"]
    X = np.asarray(m["X"], dtype=float)
    Q, K = X @ m["W_Q"], X @ m["W_K"]
    expected = engine.softmax(Q @ K.T / np.sqrt(2))
    np.testing.assert_allclose(shown, expected, atol=5e-4)
    # The lesson's numbers: the first row is (0.401, 0.401, 0.198).
    assert shown[0] == [0.401, 0.401, 0.198]
    np.testing.assert_allclose(np.sum(shown, axis=1), 1, atol=2e-3)


def test_the_causal_figure_shows_the_mask_and_the_masked_weights():
    out = str(figure_html("causal-mask"))
    cells = re.findall(r'<td class="mask-(open|blocked)">(open|blocked)</td>', out)
    blocked = np.array([state == "blocked" for state, _ in cells]).reshape(3, 3)
    np.testing.assert_array_equal(blocked, engine.causal_mask(3))
    assert all(state == word for state, word in cells)
    _, trace = worked_example(causal=True)
    np.testing.assert_allclose(_heat_cells(out), trace.weights, atol=5e-4)
    assert _heat_cells(out)[1] == [0.33, 0.67, 0.0]


def test_the_padding_figure_blocks_only_padded_keys():
    out = str(figure_html("padding-mask"))
    tokens, mask, trace = padded_batch()
    assert tokens == [["bag", "delayed", "refund"], ["refund", "delayed", "pad"]]
    cells = re.findall(r'<td class="mask-(open|blocked)">', out)
    shown = np.array([state == "blocked" for state in cells]).reshape(mask.shape)
    np.testing.assert_array_equal(shown, mask)
    weights = _heat_cells(out)
    np.testing.assert_allclose(weights, trace.weights[1], atol=5e-4)
    assert [row[2] for row in weights] == [0.0, 0.0, 0.0]


def test_the_sinusoid_chart_draws_the_engines_encodings():
    out = str(figure_html("sinusoids"))
    pe = sinusoids()
    assert 'role="img"' in out and "#000" not in out and "black" not in out
    lines = re.findall(r'<polyline class="line-(\d)" points="([^"]+)"', out)
    assert len(lines) == 3
    for index, points in lines:
        ys = np.array([float(p.split(",")[1]) for p in points.split()])
        dim = (0, 2, 4)[int(index)]
        # y = top + (1 - value) * height / 2, in the chart's units
        values = 1 - (ys - 14) * 2 / (260 - 14 - 40)
        np.testing.assert_allclose(values, pe[:, dim], atol=0.01)
    np.testing.assert_allclose(pe, engine.sinusoidal_positions(32, 16))


def test_every_figure_reads_without_colour_and_in_a_dark_theme():
    for name in FIGURES:
        out = str(figure_html(name))
        assert "<figcaption>" in out, name
        assert "#ffffff" not in out.replace("color:#ffffff", ""), name  # no white paper
        assert 'fill="black"' not in out and 'stroke="black"' not in out, name
