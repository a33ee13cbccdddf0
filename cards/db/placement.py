"""Placing new cards in one statement: the ``INSERT ... SELECT`` of the placement beat
job, and the small derived table of groups that it and the reminder pass join.

The rules (who needs a state, and the first due date of each group) are in
``cards.services.scheduling``; this module holds their SQL, the same on PostgreSQL
and SQLite.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from django.db import connection


def groups_table(
    rows: Sequence[tuple[Any, ...]], columns: tuple[str, ...]
) -> tuple[str, list[Any]]:
    """A derived table ``(SELECT %s AS c1, ... UNION ALL ...)`` for ``rows``, with its params.

    Portable between PostgreSQL and SQLite, unlike ``VALUES ... AS g(c1, ...)``.
    Dates go through the backend's adapter so PostgreSQL sees a ``date`` column.
    """
    ops = connection.ops
    first = "SELECT " + ", ".join(f"%s AS {name}" for name in columns)
    rest = "SELECT " + ", ".join("%s" for _ in columns)
    selects = [first] + [rest] * (len(rows) - 1)
    params = [
        ops.adapt_datefield_value(value) if isinstance(value, dt.date) else value
        for row in rows
        for value in row
    ]
    return "(" + " UNION ALL ".join(selects) + ")", params


def placement_sql(table: str, *, bounded: bool, one_deck: bool) -> str:
    """The ``INSERT ... SELECT`` placing the missing states of one range of learners.

    The unique index on ``(learner_id, card_id)`` is the only existence check: ``ON
    CONFLICT DO NOTHING`` probes it for every candidate row before inserting, whatever
    the statistics say. A ``NOT EXISTS`` would be planned from them, and a review-state
    table that looks empty (a new deployment, right after a VACUUM) turns it into a
    sequential scan per candidate row, quadratic in the rows the statement inserts.
    """
    # The range on the profile too: the planner does not carry it across the join.
    upper = "AND e.learner_id <= %s AND p.user_id <= %s" if bounded else ""
    deck_filter = "AND e.deck_id = %s" if one_deck else ""
    return f"""
        INSERT INTO cards_reviewstate
            (learner_id, card_id, step, due_on, last_reviewed_at, created_at, updated_at)
        SELECT e.learner_id, c.id, 0, g.due_on, NULL, %s, %s
        FROM cards_enrollment e
        JOIN cards_card c ON c.deck_id = e.deck_id AND c.is_active = %s
        JOIN cards_learnerprofile p ON p.user_id = e.learner_id
        JOIN {table} g ON g.tz = p.timezone AND g.day_start = p.day_starts_at
        WHERE e.learner_id > %s AND p.user_id > %s {upper} {deck_filter}
        ON CONFLICT (learner_id, card_id) DO NOTHING
    """


def place(sql: str, params: list[Any]) -> int:
    """Run one placement statement (it commits on its own); returns the rows it inserted."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        inserted: int = cursor.rowcount
    return max(inserted, 0)
