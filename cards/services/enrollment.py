"""Enrolment: placing a deck's cards on a learner's ladder, set-based and idempotent."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction

from .. import selectors
from ..models import Deck, Enrollment
from . import pace
from .due_exercises import queue_exercises_bind
from .pace import Placed, enrolment_place
from .scheduling import sync_scheduled

EnrollResult = Placed


@transaction.atomic
def enroll(*, learner: Any, deck: Deck, at: dt.datetime) -> EnrollResult:
    """Enrol ``learner`` in ``deck``: the pace's first batch of its cards starts at rung 0.

    Up to ``new_cards_per_day`` of the deck's cards are placed, due tomorrow; the rest
    wait in deck order for the placement job (:mod:`cards.services.pace`). Existing
    states are never touched, so enrolling again (or after unenrolling) keeps all
    progress; ``scheduled`` counts only the cards newly placed.
    """
    _, created = Enrollment.objects.get_or_create(learner=learner, deck=deck)
    # States kept from an earlier enrolment come back onto the ladder.
    sync_scheduled(learner_id=learner.pk, deck_ids=[deck.pk])
    today = selectors.learner_today(learner=learner, at=at)
    placed = enrolment_place(learner=learner, deck=deck, today=today, new=created)
    queue_exercises_bind(learner=learner, today=today)
    return placed


class NotEnrolled(Exception):
    """ "Learn more" in a deck the learner is not enrolled in."""


def learn_more(
    *, learner: Any, deck: Deck, at: dt.datetime, count: int | None = None
) -> EnrollResult:
    """ "Learn more today" (:func:`cards.services.pace.learn_more`) in an enrolled deck."""
    if not Enrollment.objects.filter(learner=learner, deck=deck).exists():
        raise NotEnrolled(f"You are not enrolled in “{deck.title}”: enrol first.")
    today = selectors.learner_today(learner=learner, at=at)
    placed = pace.learn_more(learner=learner, deck=deck, today=today, count=count)
    queue_exercises_bind(learner=learner, today=today)
    return placed


@transaction.atomic
def unenroll(*, learner: Any, deck: Deck) -> bool:
    """Take the deck's cards out of the learner's queue; states and history stay."""
    deleted, _ = Enrollment.objects.filter(learner=learner, deck=deck).delete()
    sync_scheduled(learner_id=learner.pk, deck_ids=[deck.pk])
    return bool(deleted)
