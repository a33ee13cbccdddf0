"""The review log summed per learner and study day (``ReviewDay``), kept with the log.

Every writer of the log keeps these rows in the same statement or transaction:
``INSERT ... ON CONFLICT DO UPDATE`` adds a review (``cards.db.counts.review_day_add``,
or the review's one statement in ``cards.db.reviews``; race-safe on PostgreSQL and
SQLite alike), an undo subtracts one under the row's lock, and loaders that write the
log in bulk rebuild the rows of the learners they touched. The SQL of the counts, net
of undos, is declared in ``cards.db.counts``.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F, QuerySet, Subquery

from ..db import review_days as review_day_rows
from ..models import ReviewDay, ReviewLog


def review_day_undone(*, learner: Any, log: ReviewLog) -> None:
    """Take the undone review ``log`` out of its day's row; call after logging the undo.

    Two statements in the caller's transaction: the counts first, which locks the
    row, then the earliest due date recomputed from the day's log in a statement that
    sees every review committed before the lock was taken (later ones wait for it).
    """
    day = ReviewDay.objects.filter(learner=learner, study_day=log.study_day)
    day.update(
        reviews=F("reviews") - 1,
        passes=F("passes") - (1 if log.result == ReviewLog.Result.PASS else 0),
    )
    kept = ReviewLog.objects.kept().filter(learner=learner, study_day=log.study_day)
    day.update(min_due_before=Subquery(kept.order_by("due_before").values("due_before")[:1]))


def review_days_merge(*, from_learner_id: int, into_learner_id: int) -> None:
    """Add one learner's rows to another's, day by day (the log moved between them)."""
    review_day_rows.merge(from_learner_id=from_learner_id, into_learner_id=into_learner_id)


@transaction.atomic
def review_days_rebuild(*, learners: QuerySet[Any] | None = None) -> int:
    """Recompute the rows of ``learners`` (a queryset of users; all when None) from the log.

    For writers that load the log in bulk (seed data, benchmarks). Set-based: one
    DELETE and one INSERT ... SELECT. Returns the number of rows written.
    """
    return review_day_rows.rebuild(learners=learners)
