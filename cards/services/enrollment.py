"""Enrolment: placing a deck's cards on a learner's ladder, set-based and idempotent."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from .. import ladder, selectors
from ..models import Card, Deck, Enrollment, ReviewState
from .scheduling import sync_scheduled


@dataclass(frozen=True)
class EnrollResult:
    deck: Deck
    scheduled: int
    first_due_on: dt.date | None


@transaction.atomic
def enroll(*, learner: Any, deck: Deck, at: dt.datetime) -> EnrollResult:
    """Enrol ``learner`` in ``deck``: every active card without a state starts at rung 0.

    Existing states are never touched, so enrolling again (or after unenrolling)
    keeps all progress; ``scheduled`` counts only the cards newly placed.
    """
    Enrollment.objects.get_or_create(learner=learner, deck=deck)
    # States kept from an earlier enrolment come back onto the ladder.
    sync_scheduled(learner_id=learner.pk, deck_ids=[deck.pk])
    today = selectors.learner_today(learner=learner, at=at)
    first = ladder.first_schedule(today, settings.STUDY_LADDER_DAYS)
    missing = (
        Card.objects.filter(deck=deck, is_active=True)
        .exclude(review_states__learner=learner)
        .values_list("id", flat=True)
    )
    created = ReviewState.objects.bulk_create(
        [
            ReviewState(learner=learner, card_id=card_id, step=first.step, due_on=first.due_on)
            for card_id in missing.iterator(chunk_size=2000)
        ],
        batch_size=1000,
        ignore_conflicts=True,
    )
    first_due_on = (
        ReviewState.objects.filter(learner=learner, card__deck=deck, card__is_active=True)
        .order_by("due_on")
        .values_list("due_on", flat=True)
        .first()
    )
    # With ignore_conflicts a row that a concurrent enrolment inserted first is
    # still counted here: rare, and the states themselves stay unique.
    return EnrollResult(deck=deck, scheduled=len(created), first_due_on=first_due_on)


@transaction.atomic
def unenroll(*, learner: Any, deck: Deck) -> bool:
    """Take the deck's cards out of the learner's queue; states and history stay."""
    deleted, _ = Enrollment.objects.filter(learner=learner, deck=deck).delete()
    sync_scheduled(learner_id=learner.pk, deck_ids=[deck.pk])
    return bool(deleted)
