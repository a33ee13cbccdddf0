"""Undoing a review: a compensating log entry and the state put back, race-safe."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from studyapp.common.db import retried_on_conflict

from .. import ladder, selectors
from ..models import ExerciseBinding, ReviewLog, ReviewState
from . import review_days
from .locks import learner_lock
from .reviews import review_undone


class UndoRefused(Exception):
    """The review cannot be undone (already undone, not the latest, another day)."""


@retried_on_conflict
@transaction.atomic
def review_undo(*, learner: Any, review_id: int, at: dt.datetime) -> ReviewState:
    """Undo the learner's latest review of a card, on the study day it was made, once.

    The log stays append-only: a new entry with ``undo_of`` cancels the review in
    every count, and the review leaves its day's ``ReviewDay``. The state goes back to
    where the review found it under a conditional UPDATE, so of two concurrent undos (or
    an undo racing a review) exactly one moves it. Raises ``ReviewLog.DoesNotExist`` for
    another learner's or an unknown review. The learner's lock comes first, as on every
    write to a learner's reviews (``learner_lock``); a run that still loses a deadlock is
    run again.
    """
    learner_lock(learner_id=learner.pk)
    log = ReviewLog.objects.get(pk=review_id, learner=learner, undo_of__isnull=True)
    _check_undoable(log, learner=learner, at=at)
    moved = ReviewState.objects.filter(
        learner=learner, card_id=log.card_id, step=log.step_after, due_on=log.due_after
    ).update(
        step=log.step_before,
        due_on=log.due_before,
        last_reviewed_at=_previous_review_at(log, learner=learner),
    )
    if not moved:
        raise UndoRefused("The card has moved since this review; it cannot be undone.")
    try:
        with transaction.atomic():
            _undo_entry_create(log, at=at)
    except IntegrityError:
        raise UndoRefused("This review was already undone.") from None
    review_days.review_day_undone(learner=learner, log=log)
    # An exercise card's review came from its bound exercise's first submission:
    # unbinding it lets the queue hand out a fresh exercise for the repeated review.
    ExerciseBinding.objects.filter(review=log).update(review=None)
    review_undone(learner=learner, card_id=log.card_id, at=at)
    return ReviewState.objects.get(learner=learner, card_id=log.card_id)


def _check_undoable(log: ReviewLog, *, learner: Any, at: dt.datetime) -> None:
    """Raise ``UndoRefused`` unless ``log`` is the card's latest review, today, not undone."""
    if not _is_kept(log):
        raise UndoRefused("This review was already undone.")
    today = selectors.learner_today(learner=learner, at=at)
    if log.study_day != today:
        raise UndoRefused("Only a review of the current study day can be undone.")
    latest = (
        ReviewLog.objects.filter(learner=learner, card_id=log.card_id, undo_of__isnull=True)
        .order_by("-reviewed_at", "-id")
        .values_list("pk", flat=True)
        .first()
    )
    if latest != log.pk:
        raise UndoRefused("Only your latest review of this card can be undone.")


def _previous_review_at(log: ReviewLog, *, learner: Any) -> dt.datetime | None:
    """When the learner last reviewed the card before ``log``, counting no undone review."""
    return (
        ReviewLog.objects.kept()
        .filter(learner=learner, card_id=log.card_id, reviewed_at__lt=log.reviewed_at)
        .order_by("-reviewed_at", "-id")
        .values_list("reviewed_at", flat=True)
        .first()
    )


def _undo_entry_create(log: ReviewLog, *, at: dt.datetime) -> ReviewLog:
    """The compensating entry: the review's move, reversed, on the review's study day."""
    return ReviewLog.objects.create(
        learner_id=log.learner_id,
        card_id=log.card_id,
        reviewed_at=at,
        study_day=log.study_day,
        result=log.result,
        step_before=log.step_after,
        step_after=log.step_before,
        interval_days=ladder.interval_days(log.step_before, settings.STUDY_LADDER_DAYS),
        due_before=log.due_after,
        due_after=log.due_before,
        undo_of=log,
    )


def latest_undoable(*, learner: Any, today: dt.date) -> ReviewLog | None:
    """The learner's most recent review today that has not been undone, if any."""
    log = (
        ReviewLog.objects.filter(learner=learner, study_day=today, undo_of__isnull=True)
        .order_by("-reviewed_at", "-id")
        .first()
    )
    if log is None or not _is_kept(log):
        return None
    return log


def _is_kept(log: ReviewLog) -> bool:
    """Whether no undo has cancelled the review ``log`` (``ReviewLog.objects.kept()``)."""
    return ReviewLog.objects.kept().filter(pk=log.pk).exists()
