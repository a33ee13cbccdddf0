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

from django.db import connection, transaction
from django.db.models import F, QuerySet, Subquery

from ..db.counts import (
    REVIEW_DAY_COLUMNS,
    REVIEW_DAY_ON_CONFLICT_ADD,
    review_days_from_log,
)
from ..models import ReviewDay, ReviewLog

TABLE = ReviewDay._meta.db_table


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
    kept = ReviewLog.objects.filter(
        learner=learner, study_day=log.study_day, undo_of__isnull=True, undone_by__isnull=True
    )
    day.update(min_due_before=Subquery(kept.order_by("due_before").values("due_before")[:1]))


def review_days_merge(*, from_learner_id: int, into_learner_id: int) -> None:
    """Add one learner's rows to another's, day by day (the log moved between them)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {TABLE} ({REVIEW_DAY_COLUMNS}) "
            f"SELECT %s, study_day, reviews, passes, min_due_before FROM {TABLE} "
            f"WHERE learner_id = %s {REVIEW_DAY_ON_CONFLICT_ADD}",
            [into_learner_id, from_learner_id],
        )


@transaction.atomic
def review_days_rebuild(*, learners: QuerySet[Any] | None = None) -> int:
    """Recompute the rows of ``learners`` (a queryset of users; all when None) from the log.

    For writers that load the log in bulk (seed data, benchmarks). Set-based: one
    DELETE and one INSERT ... SELECT. Returns the number of rows written.
    """
    where = log_where = ""
    params: list[Any] = []
    if learners is not None:
        subquery, subquery_params = learners.values("pk").query.sql_with_params()
        where = f"WHERE learner_id IN ({subquery})"
        log_where = f"WHERE l.learner_id IN ({subquery})"
        params = list(subquery_params)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {TABLE} {where}", params)
        cursor.execute(
            f"INSERT INTO {TABLE} ({REVIEW_DAY_COLUMNS}) {review_days_from_log()} {log_where} "
            "GROUP BY l.learner_id, l.study_day",
            params,
        )
        return int(cursor.rowcount)
