"""The progress page and the header's theme switch, through Django's test client."""

from __future__ import annotations

import pytest
from django.test import Client

from cards.models import Card, Deck, Enrollment, ReviewState, Tag

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(learner) -> Client:
    client = Client()
    client.force_login(learner)
    return client


def test_progress_needs_a_learner(client):
    response = client.get("/progress/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_progress_shows_only_the_learners_own_topics(signed_in, learner, other_learner):
    mine = Deck.objects.create(slug="mine", title="Mine")
    theirs = Deck.objects.create(slug="theirs", title="Theirs")
    Enrollment.objects.create(learner=learner, deck=mine)
    Enrollment.objects.create(learner=other_learner, deck=theirs)
    card = Card.objects.create(deck=mine, key="a", prompt="A")
    card.tags.add(Tag.objects.create(name="shapes"))
    other = Card.objects.create(deck=theirs, key="b", prompt="B")
    other.tags.add(Tag.objects.create(name="secret-topic"))
    ReviewState.objects.create(learner=other_learner, card=other, step=4, due_on="2026-03-01")
    body = signed_in.get("/progress/").content.decode()
    assert 'data-topic="tag:shapes"' in body
    assert "secret-topic" not in body
    assert "0 mastered · 0 learned · of 1 card" in body


def test_progress_without_decks_says_what_to_do(signed_in):
    response = signed_in.get("/progress/")
    assert response.status_code == 200
    assert "enrol in a deck" in response.content.decode()


def test_the_theme_switch_saves_the_profile_and_goes_back(signed_in, learner):
    response = signed_in.post("/profile/theme/", {"theme": "dark", "next": "/exercises/?kind=x"})
    assert (response.status_code, response["Location"]) == (302, "/exercises/?kind=x")
    learner.profile.refresh_from_db()
    assert learner.profile.theme == "dark"
    page = signed_in.get("/exercises/").content.decode()
    assert '<html lang="en" data-theme="dark"' in page
    assert 'value="dark" aria-pressed="true"' in page


@pytest.mark.parametrize("theme", ["", "blue", "DARK", "x" * 500])
def test_the_theme_switch_refuses_an_unknown_theme(signed_in, learner, theme):
    response = signed_in.post("/profile/theme/", {"theme": theme})
    assert response.status_code == 400
    text = response.content.decode()
    assert text.startswith("theme: expected one of auto, light, dark")
    assert len(text) < 200
    learner.profile.refresh_from_db()
    assert learner.profile.theme == "auto"


@pytest.mark.parametrize("back", ["https://elsewhere.example/", "//elsewhere.example/", "", "x"])
def test_the_theme_switch_goes_back_only_within_the_site(signed_in, back):
    response = signed_in.post("/profile/theme/", {"theme": "light", "next": back})
    assert (response.status_code, response["Location"]) == (302, "/profile/")


def test_the_theme_switch_needs_a_post_and_a_learner(client, signed_in):
    assert signed_in.get("/profile/theme/").status_code == 405
    response = client.post("/profile/theme/", {"theme": "dark"})
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_signed_out_pages_follow_the_device(client):
    assert '<html lang="en" data-theme="auto"' in client.get("/login/").content.decode()
