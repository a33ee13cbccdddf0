"""Staff edit the lesson in the admin: sections with a rendered preview (figures drawn),
the lesson rules on the section form, and a card's section chosen from its deck's."""

from __future__ import annotations

import pytest
from django.urls import reverse

from cards.decks import deck_import
from cards.forms import CardAdminForm
from cards.models import Card, Deck, LessonSection

from .test_lesson_deck_file import lesson_doc

pytestmark = pytest.mark.django_db


@pytest.fixture
def heads() -> Deck:
    deck_import(data=lesson_doc())
    return Deck.objects.get(slug="heads")


@pytest.fixture
def admin_client(client, staff):
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    return client


def _section(key: str) -> LessonSection:
    return LessonSection.objects.get(deck__slug="heads", key=key)


def _post_section(admin_client, section: LessonSection, **fields):
    data = {
        "deck": section.deck_id,
        "position": section.position,
        "key": section.key,
        "title": section.title,
        "body": section.body,
        **fields,
    }
    return admin_client.post(reverse("admin:cards_lessonsection_change", args=[section.pk]), data)


def test_the_section_page_previews_the_body_with_its_figure(admin_client, heads):
    section = _section("worked-example")
    page = admin_client.get(reverse("admin:cards_lessonsection_change", args=[section.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'class="card-preview lesson-preview"' in html
    assert 'data-figure="worked-example-weights"' in html and ">0.401</td>" in html
    assert "css/lesson.css" in html and "math-warning" not in html


def test_the_section_list_filters_by_deck_in_lesson_order(admin_client, heads):
    page = admin_client.get(
        reverse("admin:cards_lessonsection_changelist") + f"?deck__id__exact={heads.pk}"
    )
    html = page.content.decode()
    assert page.status_code == 200
    assert html.index("The objective") < html.index("Three tokens by hand") < html.index("Masks")


def test_the_deck_page_outlines_its_lesson(admin_client, heads):
    page = admin_client.get(reverse("admin:cards_deck_change", args=[heads.pk])).content.decode()
    assert 'name="lesson_title"' in page
    for key in ("objective", "worked-example", "masks"):
        assert f"<code>#{key}</code>" in page
    assert reverse("deck-lesson", args=["heads"]) in page


def test_an_unknown_figure_or_a_taken_key_is_refused(admin_client, heads):
    section = _section("masks")
    response = _post_section(admin_client, section, body="{{figure:foo}}")
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "Unknown figure 'foo'" in " ".join(errors["body"])
    response = _post_section(admin_client, section, key="objective")
    assert "already has the key 'objective'" in " ".join(
        response.context["adminform"].form.errors["key"]
    )
    section.refresh_from_db()
    assert (section.key, section.body) == ("masks", "{{figure:causal-mask}}")


def test_broken_math_is_saved_with_a_warning(admin_client, heads):
    section = _section("objective")
    response = _post_section(admin_client, section, body="Broken $x^$.")
    assert response.status_code == 302
    followed = admin_client.get(response["Location"])
    assert any("check the body" in str(m) for m in followed.context["messages"])


def test_a_renamed_key_carries_its_cards_and_a_deleted_section_lets_them_go(admin_client, heads):
    section = _section("worked-example")
    assert _post_section(admin_client, section, key="by-hand").status_code == 302
    assert Card.objects.get(key="why-scale").lesson_section == "by-hand"
    masks = _section("masks")
    response = admin_client.post(
        reverse("admin:cards_lessonsection_delete", args=[masks.pk]), {"post": "yes"}
    )
    assert response.status_code == 302
    assert not LessonSection.objects.filter(pk=masks.pk).exists()
    assert Card.objects.get(key="mask-by-hand").lesson_section is None


def test_the_card_form_offers_its_decks_sections_and_refuses_another_key(admin_client, heads):
    card = Card.objects.get(key="no-section")
    form = CardAdminForm(instance=card)
    offered = [value for value, _ in form.fields["lesson_section"].widget.choices]
    assert offered == ["", "objective", "worked-example", "masks"]
    page = admin_client.get(reverse("admin:cards_card_change", args=[card.pk])).content.decode()
    assert 'name="lesson_section"' in page and '<option value="masks">' in page
    data = {
        "deck": heads.pk,
        "key": card.key,
        "kind": "recall",
        "position": 0,
        "is_active": "on",
        "prompt": "P",
        "answer": "A",
        "exercise": "null",
        "lesson_section": "positions",
    }
    url = reverse("admin:cards_card_change", args=[card.pk])
    response = admin_client.post(url, data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["lesson_section"]
    assert "key of a section of the deck's lesson" in " ".join(errors)
    assert admin_client.post(url, {**data, "lesson_section": "masks"}).status_code == 302
    card.refresh_from_db()
    assert card.lesson_section == "masks"
    assert admin_client.post(url, {**data, "lesson_section": ""}).status_code == 302
    card.refresh_from_db()
    assert card.lesson_section is None


def test_a_new_card_is_offered_the_sections_of_every_deck_by_deck(heads):
    form = CardAdminForm()
    choices = form.fields["lesson_section"].widget.choices
    assert choices[0] == ("", "---------")
    assert choices[1][0] == "Heads" and [k for k, _ in choices[1][1]] == [
        "objective",
        "worked-example",
        "masks",
    ]
