"""What the review page shows next: the oldest due card that can be reviewed now."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from exercises.models import Exercise

from ..due import due_reviews
from ..models import Card, ReviewState
from .exercise_reviews import exercise_for_review

REVIEW_BATCH = 20  # due cards read at a time while looking for one that can be shown


@dataclass(frozen=True)
class NextReview:
    """The state to show (``None`` with nothing due), its bound exercise for an exercise
    card (``None`` when the card's spec cannot generate one), and how many cards that
    cannot be reviewed were passed over to reach it."""

    state: ReviewState | None = None
    exercise: Exercise | None = None
    skipped: int = 0


def next_reviewable(*, learner: Any, today: dt.date) -> NextReview:
    """The oldest due card that can be reviewed now, binding its exercise if it has one.

    An exercise card whose spec cannot generate an exercise cannot be reviewed and
    would otherwise sit at the head of the queue, hiding every card behind it. Such
    cards are passed over (counted in ``skipped``) while anything else is due; alone,
    the first of them is shown as it is.
    """
    due = due_reviews(learner=learner, today=today)
    first: ReviewState | None = None
    skipped = 0
    while True:
        batch = list(due[skipped : skipped + REVIEW_BATCH])
        for state in batch:
            if state.card.kind != Card.Kind.EXERCISE:
                return NextReview(state, None, skipped)
            exercise = exercise_for_review(learner=learner, card=state.card, today=today)
            if exercise is not None:
                return NextReview(state, exercise, skipped)
            first = first or state
            skipped += 1
        if len(batch) < REVIEW_BATCH:
            return NextReview(first)
