"""The review log summed per learner and study day (``ReviewDay``), kept with the log.

Every writer of the log keeps these rows in the same statement or transaction:
``INSERT ... ON CONFLICT DO UPDATE`` adds a review (race-safe on PostgreSQL and
SQLite alike), an undo subtracts one under the row's lock, and loaders that write
the log in bulk rebuild the rows of the learners they touched.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import connection, transaction
from django.db.models import F, QuerySet, Subquery

from ..models import ReviewDay, ReviewLog

TABLE = ReviewDay._meta.db_table
LOG_TABLE = ReviewLog._meta.db_table

# The earlier of the stored and the incoming ``min_due_before``; NULL means none yet.
_EARLIER = (
    f"CASE WHEN {TABLE}.min_due_before IS NULL "
    f"OR EXCLUDED.min_due_before < {TABLE}.min_due_before "
    f"THEN EXCLUDED.min_due_before ELSE {TABLE}.min_due_before END"
)

# Add rows to what is stored for the same (learner, study day).
ON_CONFLICT_ADD = f"""
    ON CONFLICT (learner_id, study_day) DO UPDATE SET
        reviews = {TABLE}.reviews + EXCLUDED.reviews,
        passes = {TABLE}.passes + EXCLUDED.passes,
        min_due_before = {_EARLIER}
"""

COLUMNS = "learner_id, study_day, reviews, passes, min_due_before"

# Per day from the log: each compensating entry cancels the review it undoes, and
# only reviews not undone say since when their card had waited.
_FROM_LOG = f"""
    SELECT l.learner_id, l.study_day,
        SUM(CASE WHEN l.undo_of_id IS NULL THEN 1 ELSE -1 END),
        SUM(CASE WHEN l.result = 'pass'
            THEN (CASE WHEN l.undo_of_id IS NULL THEN 1 ELSE -1 END) ELSE 0 END),
        MIN(CASE WHEN l.undo_of_id IS NULL AND u.id IS NULL THEN l.due_before END)
    FROM {LOG_TABLE} l LEFT JOIN {LOG_TABLE} u ON u.undo_of_id = l.id
"""


def review_day_add(
    *, learner_id: int, study_day: dt.date, passed: bool, due_before: dt.date
) -> None:
    """Count one review in its day's row (one statement; the caller's transaction)."""
    ops = connection.ops
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {TABLE} ({COLUMNS}) VALUES (%s, %s, 1, %s, %s) {ON_CONFLICT_ADD}",
            [
                learner_id,
                ops.adapt_datefield_value(study_day),
                int(passed),
                ops.adapt_datefield_value(due_before),
            ],
        )


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
            f"INSERT INTO {TABLE} ({COLUMNS}) "
            f"SELECT %s, study_day, reviews, passes, min_due_before FROM {TABLE} "
            f"WHERE learner_id = %s {ON_CONFLICT_ADD}",
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
            f"INSERT INTO {TABLE} ({COLUMNS}) {_FROM_LOG} {log_where} "
            "GROUP BY l.learner_id, l.study_day",
            params,
        )
        return int(cursor.rowcount)
