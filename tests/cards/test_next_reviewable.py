"""What the review page shows next: ``next_reviewable`` on its own, then through the page."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client

from cards import services
from cards.models import Card, Deck, ExerciseBinding, ReviewState
from cards.services import review_page
from cards.services.review_page import NextReview, next_reviewable

pytestmark = pytest.mark.django_db

TODAY = dt.date(2026, 3, 10)
AT = dt.datetime(2026, 3, 9, 12, 0, tzinfo=dt.UTC)
GOOD = {"kind": "attention", "params": {"n": 2}}
BROKEN = {"kind": "attention", "params": {"n": 99}}  # outside the kind's limits


def make_deck(*kinds: str) -> Deck:
    """A deck with one card per item of ``kinds``: "recall", "exercise" or "broken"."""
    deck = Deck.objects.create(slug="page", title="Page")
    for i, kind in enumerate(kinds):
        Card.objects.create(
            deck=deck,
            key=f"c{i}",
            kind="recall" if kind == "recall" else "exercise",
            prompt=f"P{i}",
            answer=f"A{i}",
            exercise={"broken": BROKEN, "exercise": GOOD}.get(kind),
            position=i,
        )
    return deck


def enrol(learner, deck: Deck) -> list[Card]:
    services.enroll(learner=learner, deck=deck, at=AT)
    cards = list(deck.cards.order_by("position"))
    # Oldest due first: card i falls due i days after the first.
    for i, card in enumerate(cards):
        ReviewState.objects.filter(learner=learner, card=card).update(
            due_on=TODAY - dt.timedelta(days=len(cards) - i)
        )
    return cards


def test_nothing_due_shows_nothing(learner):
    enrol(learner, make_deck("recall"))
    ReviewState.objects.update(due_on=TODAY + dt.timedelta(days=1))
    assert next_reviewable(learner=learner, today=TODAY) == NextReview(None, None, 0)


def test_the_oldest_due_recall_card_comes_first(learner):
    cards = enrol(learner, make_deck("recall", "recall"))
    shown = next_reviewable(learner=learner, today=TODAY)
    assert (shown.state.card, shown.exercise, shown.skipped) == (cards[0], None, 0)


def test_an_exercise_card_comes_with_its_bound_exercise(learner):
    cards = enrol(learner, make_deck("exercise", "recall"))
    shown = next_reviewable(learner=learner, today=TODAY)
    assert shown.state.card == cards[0] and shown.skipped == 0
    binding = ExerciseBinding.objects.get(learner=learner, card=cards[0], study_day=TODAY)
    assert shown.exercise is not None and shown.exercise.pk == binding.exercise_id
    # Asked again the same day, the same exercise.
    assert next_reviewable(learner=learner, today=TODAY).exercise.pk == shown.exercise.pk


def test_cards_that_cannot_generate_are_passed_over_and_counted(learner):
    cards = enrol(learner, make_deck("broken", "broken", "recall", "exercise"))
    shown = next_reviewable(learner=learner, today=TODAY)
    assert (shown.state.card, shown.exercise, shown.skipped) == (cards[2], None, 2)


def test_alone_the_first_card_that_cannot_generate_is_shown_as_it_is(learner):
    cards = enrol(learner, make_deck("broken", "broken"))
    shown = next_reviewable(learner=learner, today=TODAY)
    assert (shown.state.card, shown.exercise, shown.skipped) == (cards[0], None, 0)


@pytest.mark.parametrize("batch", [1, 2, 3])
def test_the_search_reads_on_past_a_batch_of_cards_that_cannot_generate(
    learner, monkeypatch, batch
):
    monkeypatch.setattr(review_page, "REVIEW_BATCH", batch)
    cards = enrol(learner, make_deck("broken", "broken", "broken", "exercise", "recall"))
    shown = next_reviewable(learner=learner, today=TODAY)
    assert (shown.state.card, shown.skipped) == (cards[3], 3)
    assert shown.exercise is not None


def test_the_review_page_renders_what_the_service_chose(learner, monkeypatch):
    cards = enrol(learner, make_deck("recall", "recall"))
    chosen = ReviewState.objects.get(learner=learner, card=cards[1])
    monkeypatch.setattr(
        "cards.views.session.next_reviewable",
        lambda *, learner, today: NextReview(chosen, None, 4),
    )
    client = Client()
    client.force_login(learner)
    page = client.get("/review/")
    assert page.status_code == 200
    assert page.context["card"] == cards[1] and page.context["skipped"] == 4
