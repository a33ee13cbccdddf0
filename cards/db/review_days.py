"""The ``ReviewDay`` rows' bulk statements: one learner's rows merged into another's, and
rows rebuilt from the log. The per-review statements and the SQL of the counts, net of
undos, are in ``cards.db.counts``; the rules, in ``cards.services.review_days``.
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import QuerySet

from studyapp.common.subquery import subquery_sql

from ..models import ReviewDay
from .counts import REVIEW_DAY_COLUMNS, REVIEW_DAY_ON_CONFLICT_ADD, review_days_from_log

TABLE = ReviewDay._meta.db_table


def merge(*, from_learner_id: int, into_learner_id: int) -> None:
    """Add one learner's rows to another's, day by day, in one ``INSERT ... ON CONFLICT``."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {TABLE} ({REVIEW_DAY_COLUMNS}) "
            f"SELECT %s, study_day, reviews, passes, min_due_before FROM {TABLE} "
            f"WHERE learner_id = %s {REVIEW_DAY_ON_CONFLICT_ADD}",
            [into_learner_id, from_learner_id],
        )


def rebuild(*, learners: QuerySet[Any] | None) -> int:
    """Recompute the rows of ``learners`` (all when None) from the log: one DELETE and one
    INSERT ... SELECT, in the caller's transaction. Returns the number of rows written."""
    where = log_where = ""
    params: list[Any] = []
    if learners is not None:
        subquery, subquery_params = subquery_sql(learners.values("pk"))
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
