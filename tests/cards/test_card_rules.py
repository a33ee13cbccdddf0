"""One set of card rules: the API, the admin form and deck files refuse the same cards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

from cards import rules
from cards.decks import DeckFileError, deck_validate
from cards.forms import CardAdminForm
from cards.models import Card, Deck

pytestmark = pytest.mark.django_db

GOOD_EXERCISE = {"kind": "attention", "params": {"n": 3}}

# (card fields, the field at fault, words the message must carry)
BAD_CARDS = [
    (
        {"kind": "exercise", "answer": "", "exercise": {"kind": "attention", "params": {"n": 99}}},
        "exercise.params.n",
        "expected a value from 2",
    ),
    (
        {
            "kind": "exercise",
            "answer": "",
            "exercise": {"kind": "attention", "params": {"seed": 7}},
        },
        "exercise.params.seed",
        "server-chosen seed at every review",
    ),
    (
        {"kind": "exercise", "answer": "", "exercise": {"kind": "telepathy", "params": {}}},
        "exercise.kind",
        "expected one of ablation, attention",
    ),
    ({"kind": "exercise", "answer": "", "exercise": None}, "exercise", "needs {kind, params}"),
    (
        {"kind": "recall", "answer": "   ", "exercise": None},
        "answer",
        "a recall card needs an answer",
    ),
    ({"kind": "interview", "answer": "", "exercise": None}, "answer", "an interview card needs"),
    (
        {"kind": "recall", "answer": "A", "exercise": GOOD_EXERCISE},
        "exercise",
        "only exercise cards carry one",
    ),
]
IDS = ["params-out-of-range", "seed", "unknown-kind", "no-spec", "blank-recall", "blank-interview", "spec-on-recall"]  # fmt: skip


def _messages(problems: dict, field: str) -> str:
    return " ".join(problems.get(field, [])).lower()


@pytest.mark.parametrize(("fields", "field", "words"), BAD_CARDS, ids=IDS)
def test_the_rules_name_the_field_and_what_was_expected(fields, field, words):
    problems = rules.card_problems(prompt="Prompt", **fields)
    assert words in _messages(problems, field), problems


@pytest.mark.parametrize(("fields", "field", "words"), BAD_CARDS, ids=IDS)
def test_the_api_refuses_the_card_and_stores_nothing(staff_api, deck, fields, field, words):
    body = {"deck": deck.slug, "prompt": "Prompt", **fields}
    before = Card.objects.count()
    response = staff_api.post("/api/v1/cards/", body, format="json")
    assert response.status_code == 400, response.content
    errors = response.json()
    top, _, rest = field.partition(".")
    detail = errors[top]
    text = str(detail).lower()
    assert words in text, errors
    if rest:
        # Nested exercise errors name the parameter: {"exercise": {"params.n": [...]}}.
        assert rest in detail, errors
    assert Card.objects.count() == before


@pytest.mark.parametrize(("fields", "field", "words"), BAD_CARDS, ids=IDS)
def test_the_admin_form_refuses_the_card(deck, fields, field, words):
    data = {
        "deck": deck.pk,
        "key": "",
        "kind": fields["kind"],
        "position": 0,
        "is_active": True,
        "prompt": "Prompt",
        "answer": fields["answer"],
        "exercise": json.dumps(fields["exercise"]),
    }
    form = CardAdminForm(data=data)
    assert not form.is_valid()
    top, _, rest = field.partition(".")
    text = " ".join(form.errors.get(top, [])).lower()
    assert words in text, form.errors
    if rest:
        assert rest in text


@pytest.mark.parametrize(("fields", "field", "words"), BAD_CARDS, ids=IDS)
def test_a_deck_file_refuses_the_card(fields, field, words):
    entry = {"key": "the-card", "prompt": "Prompt", **fields}
    document = {"format": 1, "deck": {"slug": "toy", "title": "Toy"}, "cards": [entry]}
    with pytest.raises(DeckFileError) as excinfo:
        deck_validate(document)
    assert any(
        error.startswith(f"cards[0].{field}: ") and words in error.lower()
        for error in excinfo.value.errors
    ), excinfo.value.errors


def test_a_good_exercise_card_passes_everywhere(staff_api, deck):
    assert rules.card_problems(kind="exercise", prompt="P", answer="", exercise=GOOD_EXERCISE) == {}
    response = staff_api.post(
        "/api/v1/cards/",
        {"deck": deck.slug, "kind": "exercise", "prompt": "P", "exercise": GOOD_EXERCISE},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["exercise"] == GOOD_EXERCISE
    form = CardAdminForm(
        data={
            "deck": deck.pk,
            "kind": "exercise",
            "position": 0,
            "prompt": "P",
            "answer": "",
            "exercise": '{"kind": "attention", "params": {"n": 3}}',
        }
    )
    assert form.is_valid(), form.errors


@pytest.fixture
def admin_client(client, staff):
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    return client


def _admin_add(admin_client, deck, **fields):
    data = {
        "deck": deck.pk,
        "key": "",
        "kind": "recall",
        "position": 0,
        "is_active": "on",
        "prompt": "Prompt",
        "answer": "Answer",
        "exercise": "null",
        **fields,
    }
    return admin_client.post(reverse("admin:cards_card_add"), data)


def test_admin_refuses_the_two_cards_the_api_refuses(admin_client, deck):
    before = Card.objects.count()
    bad_params = _admin_add(
        admin_client,
        deck,
        kind="exercise",
        answer="",
        exercise='{"kind": "attention", "params": {"n": 99}}',
    )
    assert bad_params.status_code == 200  # the form comes back with its errors
    assert "params.n" in str(bad_params.context["adminform"].form.errors["exercise"])
    blank = _admin_add(admin_client, deck, answer="  ")
    assert "needs an answer" in str(blank.context["adminform"].form.errors["answer"])
    assert Card.objects.count() == before


def test_a_duplicate_key_in_the_admin_gets_a_sentence(admin_client, deck):
    Card.objects.filter(pk=deck.cards.first().pk).update(key="why-scale")
    page = _admin_add(admin_client, deck, key="why-scale")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Another card in this deck already has the key" in html
    assert "Constraint" not in html and "violated" not in html
    # The same key in another deck is fine.
    other = Deck.objects.create(slug="other", title="Other")
    assert _admin_add(admin_client, other, key="why-scale").status_code == 302


def test_the_api_names_a_duplicate_key_the_same_way(staff_api, deck):
    Card.objects.filter(pk=deck.cards.first().pk).update(key="why-scale")
    response = staff_api.post(
        "/api/v1/cards/",
        {"deck": deck.slug, "kind": "recall", "prompt": "P", "answer": "A", "key": "why-scale"},
        format="json",
    )
    assert response.status_code == 400
    assert "already has the key 'why-scale'" in response.json()["key"][0]


def test_broken_tex_warns_on_save_and_in_the_preview(admin_client, deck):
    response = _admin_add(admin_client, deck, answer="Broken $x^$ formula.", key="broken-tex")
    assert response.status_code == 302  # saved: a warning, not a refusal
    card = Card.objects.get(key="broken-tex")
    followed = admin_client.get(response["Location"])
    warnings = [str(m) for m in followed.context["messages"]]
    assert any("check the answer" in m and "$x^$" in m for m in warnings), warnings
    page = admin_client.get(reverse("admin:cards_card_change", args=[card.pk])).content.decode()
    assert 'class="math-warning"' in page and "Math does not render: $x^$" in page
    fine = admin_client.get(reverse("admin:cards_card_change", args=[deck.cards.first().pk]))
    assert 'class="math-warning"' not in fine.content.decode()


def test_the_preview_keeps_list_bullets(admin_client, deck, settings):
    card = deck.cards.first()
    Card.objects.filter(pk=card.pk).update(answer="- one\n- two\n\n1. first\n2. second\n")
    page = admin_client.get(reverse("admin:cards_card_change", args=[card.pk])).content.decode()
    assert "<ul>\n<li>one</li>" in page and "<ol>\n<li>first</li>" in page
    assert "css/admin-card-preview.css" in page
    css = Path(finders.find("css/admin-card-preview.css")).read_text()
    assert "form .aligned .card-preview ul li" in css and "list-style: disc" in css
    assert "list-style: decimal" in css and "margin-left: 0" in css
