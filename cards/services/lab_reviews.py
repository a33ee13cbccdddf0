"""Lab cards on the ladder: the first submission of a lab on a study day reviews its card.

This is the layer that knows both apps: ``labs`` saves and grades submissions and tells
the review side it is given (``labs.reviews``, registered by ``cards.apps``); here the
study core decides which submission counts and records the review.

- ``lab_submitted``: a new submission is bound (``LabBinding``) to each card of that lab
  in the learner's due queue that has no binding yet that study day. One binding per
  learner, card and day: a second submission the same day is practice.
- ``lab_due`` and ``lab_review_of``: what the lab page says of the review (the next
  submission records it; this one recorded Good or Again).
- ``lab_graded``: a judged submission records its bound card's review, ``pass`` exactly
  when it passed, once (the binding keeps the review), and only while the card is still
  in the queue and not reviewed since it was bound. A submission the sandbox could not
  run (``failed``, ``passed`` None) frees its binding, so the next submission counts.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction

from .. import selectors
from ..due import queue_states
from ..models import Card, LabBinding, ReviewLog
from .errors import NotDue, NotScheduled
from .locks import learner_lock
from .reviews import exercise_review_record


def lab_submitted(*, learner: Any, lab_slug: str, submission_id: int, at: dt.datetime) -> int:
    """Bind a new submission to the review of each due card of its lab; how many it bound."""
    today = selectors.learner_today(learner=learner, at=at)
    card_ids = list(
        queue_states(learner=learner, today=today)
        .filter(card__kind=Card.Kind.LAB, card__lab=lab_slug)
        .values_list("card_id", flat=True)
    )
    if not card_ids:
        return 0
    taken = set(
        LabBinding.objects.filter(
            learner=learner, card_id__in=card_ids, study_day=today
        ).values_list("card_id", flat=True)
    )
    fresh = [
        LabBinding(
            learner=learner,
            card_id=card_id,
            study_day=today,
            submission_id=submission_id,
            created_at=at,
        )
        for card_id in card_ids
        if card_id not in taken
    ]
    # A concurrent first submission may bind the same card: the unique constraint keeps one.
    LabBinding.objects.bulk_create(fresh, ignore_conflicts=True)
    return len(fresh)


def lab_due(*, learner: Any, lab_slug: str, at: dt.datetime) -> bool:
    """A card of this lab waits in the learner's review today, no submission bound to it."""
    today = selectors.learner_today(learner=learner, at=at)
    bound = LabBinding.objects.filter(learner=learner, study_day=today).values("card_id")
    return (
        queue_states(learner=learner, today=today)
        .filter(card__kind=Card.Kind.LAB, card__lab=lab_slug)
        .exclude(card_id__in=bound)
        .exists()
    )


def lab_review_of(*, submission_id: int) -> str | None:
    """The result of the review this submission recorded ("pass" or "fail"), or None."""
    return (
        LabBinding.objects.filter(submission_id=submission_id, review__isnull=False)
        .values_list("review__result", flat=True)
        .first()
    )


def lab_graded(*, submission_id: int, passed: bool | None, at: dt.datetime) -> list[ReviewLog]:
    """Record the reviews a judged submission is bound to; free them if it could not run."""
    bindings = LabBinding.objects.filter(submission_id=submission_id, review__isnull=True)
    if passed is None:
        bindings.delete()
        return []
    recorded = []
    for binding in bindings.select_related("learner"):
        review = _binding_record(binding=binding, passed=passed, at=at)
        if review is not None:
            recorded.append(review)
    return recorded


@transaction.atomic
def _binding_record(*, binding: LabBinding, passed: bool, at: dt.datetime) -> ReviewLog | None:
    learner = binding.learner
    learner_lock(learner_id=learner.pk)
    today = selectors.learner_today(learner=learner, at=at)
    reviewed_since = ReviewLog.objects.filter(
        learner=learner, card_id=binding.card_id, reviewed_at__gte=binding.created_at
    ).exists()
    in_queue = queue_states(learner=learner, today=today).filter(card_id=binding.card_id).exists()
    if reviewed_since or not in_queue:
        return None
    try:
        with transaction.atomic():
            review = exercise_review_record(
                learner=learner, card_id=binding.card_id, passed=passed, today=today, at=at
            )
    except (NotDue, NotScheduled):
        return None
    claimed = LabBinding.objects.filter(pk=binding.pk, review__isnull=True).update(review=review)
    if not claimed:  # recorded by a concurrent run: undo ours with the transaction
        transaction.set_rollback(True)
        return None
    return review
