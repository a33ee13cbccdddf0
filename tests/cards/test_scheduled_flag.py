"""ReviewState.scheduled follows the cards' activity and the learner's enrolments.

The due queue, its count, the stats and the reminders read the flag instead of
joining cards and enrolments, so every service that changes either keeps it.
"""

from __future__ import annotations

import datetime as dt
import importlib

import pytest
from django.apps import apps
from django.urls import reverse

from cards import due, services
from cards.decks import deck_export, deck_import
from cards.models import Card, ReviewState

pytestmark = pytest.mark.django_db

AT = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)
LATER = dt.date(2026, 3, 20)


def flags(learner) -> dict[int, bool]:
    return dict(ReviewState.objects.filter(learner=learner).values_list("card_id", "scheduled"))


def queue(learner) -> set[int]:
    return set(due.queue_states(learner=learner, today=LATER).values_list("card_id", flat=True))


def on_ladder(learner) -> set[int]:
    """What the flag stands for, computed from cards and enrolments."""
    return set(
        ReviewState.objects.filter(
            learner=learner, card__is_active=True, card__deck__enrollments__learner=learner
        ).values_list("card_id", flat=True)
    )


def test_enrol_unenrol_and_enrol_again(learner, deck, other_deck):
    services.enroll(learner=learner, deck=deck, at=AT)
    services.enroll(learner=learner, deck=other_deck, at=AT)
    ids = set(deck.cards.values_list("id", flat=True))
    assert queue(learner) == ids | set(other_deck.cards.values_list("id", flat=True))

    services.unenroll(learner=learner, deck=deck)
    assert {c for c, s in flags(learner).items() if not s} == ids
    assert (
        queue(learner) == on_ladder(learner) == set(other_deck.cards.values_list("id", flat=True))
    )
    assert due.due_count(learner=learner, today=LATER) == 1

    services.enroll(learner=learner, deck=deck, at=AT)
    assert all(flags(learner).values())
    assert queue(learner) == on_ladder(learner)


def test_unenrolling_one_learner_leaves_the_others_queue(learner, other_learner, deck):
    for who in (learner, other_learner):
        services.enroll(learner=who, deck=deck, at=AT)
    services.unenroll(learner=learner, deck=deck)
    assert queue(learner) == set()
    assert queue(other_learner) == set(deck.cards.values_list("id", flat=True))


def test_deactivating_and_activating_cards(learner, other_learner, deck):
    for who in (learner, other_learner):
        services.enroll(learner=who, deck=deck, at=AT)
    first, second, *_ = deck.cards.order_by("id")
    services.cards_set_active(card_ids=[first.pk], active=False)
    assert flags(learner)[first.pk] is False and flags(other_learner)[first.pk] is False
    assert first.pk not in queue(learner)

    services.card_update(card=second, is_active=False)
    assert second.pk not in queue(other_learner)
    assert queue(learner) == on_ladder(learner)

    services.cards_set_active(card_ids=[first.pk, second.pk], active=True)
    assert queue(learner) == queue(other_learner) == set(deck.cards.values_list("id", flat=True))


def test_moving_a_card_to_a_deck_not_enrolled(learner, deck, other_deck):
    services.enroll(learner=learner, deck=deck, at=AT)
    card = deck.cards.order_by("id").first()
    services.card_update(card=card, deck=other_deck)
    assert card.pk not in queue(learner)
    services.enroll(learner=learner, deck=other_deck, at=AT)
    assert card.pk in queue(learner)


def test_deck_import_deactivating_missing_cards(learner, deck):
    deck.cards.filter(answer="").update(answer="An answer")
    services.enroll(learner=learner, deck=deck, at=AT)
    doc = deck_export(deck=deck)
    dropped = doc["cards"].pop(0)
    deck_import(data=doc, deactivate_missing=True)
    card = Card.objects.get(deck=deck, prompt=dropped["prompt"])
    assert not card.is_active
    assert card.pk not in queue(learner)
    assert queue(learner) == on_ladder(learner)

    doc["cards"].insert(0, dropped)
    deck_import(data=doc)
    assert card.pk in queue(learner)


def test_deck_import_marking_a_card_inactive(learner, deck):
    deck.cards.filter(answer="").update(answer="An answer")
    services.enroll(learner=learner, deck=deck, at=AT)
    doc = deck_export(deck=deck)
    doc["cards"][0]["active"] = False
    deck_import(data=doc)
    card = Card.objects.get(deck=deck, prompt=doc["cards"][0]["prompt"])
    assert not card.is_active
    assert card.pk not in queue(learner)
    assert queue(learner) == on_ladder(learner)

    doc["cards"][0]["active"] = True
    deck_import(data=doc)
    assert card.pk in queue(learner)


def test_admin_card_form_deactivates(admin_client, learner, deck):
    services.enroll(learner=learner, deck=deck, at=AT)
    card = deck.cards.order_by("id").first()
    url = reverse("admin:cards_card_change", args=[card.pk])
    response = admin_client.post(
        url,
        {
            "deck": deck.pk,
            "key": card.key,
            "kind": card.kind,
            "position": card.position,
            # is_active left out: the checkbox is cleared
            "prompt": card.prompt,
            "answer": card.answer,
            "exercise": "null",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    card.refresh_from_db()
    assert not card.is_active
    assert card.pk not in queue(learner)


def test_states_placed_by_the_beat_job_are_scheduled(learner, deck):
    services.enroll(learner=learner, deck=deck, at=AT)
    new = Card.objects.create(deck=deck, kind="recall", prompt="New", answer="A", position=9)
    from cards.services.scheduling import schedule_new_cards

    from .conftest import reviewed_on_study_day

    reviewed_on_study_day(learner, AT)
    assert schedule_new_cards(at=AT) == 1
    assert ReviewState.objects.get(learner=learner, card=new).scheduled is True
    assert new.pk in queue(learner)


def test_sync_scheduled_repairs_only_wrong_flags(learner, other_learner, deck):
    for who in (learner, other_learner):
        services.enroll(learner=who, deck=deck, at=AT)
    Card.objects.filter(pk=deck.cards.order_by("id").first().pk).update(is_active=False)
    ReviewState.objects.filter(learner=other_learner).update(scheduled=False)
    assert services.sync_scheduled(learner_id=learner.pk) == 1
    assert queue(learner) == on_ladder(learner)
    assert queue(other_learner) == set()  # out of scope: untouched
    assert services.sync_scheduled(deck_ids=[deck.pk]) == 3
    assert queue(other_learner) == on_ladder(other_learner)
    assert services.sync_scheduled() == 0


def test_migration_marks_states_off_the_ladder(learner, deck, other_deck):
    services.enroll(learner=learner, deck=deck, at=AT)
    services.enroll(learner=learner, deck=other_deck, at=AT)
    first = deck.cards.order_by("id").first()
    # Rows as they stood before the flag: everything true.
    Card.objects.filter(pk=first.pk).update(is_active=False)
    learner.enrollments.filter(deck=other_deck).delete()
    ReviewState.objects.update(scheduled=True)

    migration = importlib.import_module("cards.migrations.0004_review_state_scheduled_flag")
    migration.mark_unscheduled(apps, None)

    assert (
        queue(learner)
        == on_ladder(learner)
        == set(deck.cards.values_list("id", flat=True)) - {first.pk}
    )
