"""Placing new cards in one statement: the ``INSERT ... SELECT`` of the placement beat
job (the pace), and the small derived table of groups that it and the reminder pass join.

The rules (who needs a state, and the first due date of each group) are in
``cards.services.scheduling``; this module holds their SQL, the same on PostgreSQL
and SQLite.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from django.db import connection

# Rows of a :func:`groups_table` per statement, for the placement job and the reminder
# pass alike; a pass over more groups runs one statement per slice of this many. Each row
# is one ``SELECT`` of the table's ``UNION ALL``: SQLite refuses a compound SELECT of more
# than 500 terms (SQLITE_MAX_COMPOUND_SELECT), so a slice keeps to half of that, and its
# four parameters a row stay far below either database's limit on parameters.
GROUPS_PER_STATEMENT = 250


def groups_table(
    rows: Sequence[tuple[Any, ...]], columns: tuple[str, ...]
) -> tuple[str, list[Any]]:
    """A derived table ``(SELECT %s AS c1, ... UNION ALL ...)`` for ``rows``, with its params.

    Portable between PostgreSQL and SQLite, unlike ``VALUES ... AS g(c1, ...)``; at most
    ``GROUPS_PER_STATEMENT`` rows. Dates go through the backend's adapter so PostgreSQL
    sees a ``date`` column.
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
    """The ``INSERT ... SELECT`` of the pace: one range of learners' next waiting cards.

    For each learner of the range whose group row ``g`` (time zone, day start) names a
    study day ``g.day`` on which they reviewed and whose allowance for that day is not
    spent, the first ``new_cards_per_day`` less ``placed on g.day`` of their waiting
    cards, in line order (decks as enrolled, then deck order: ``cards.services.pace``),
    start at step 0, due ``g.due_on``, placed on ``g.day``. A learner whose allowance is
    spent is filtered out before any of their cards is read, so the runs after a day's
    placement cost one index probe per learner.

    ``ON CONFLICT DO NOTHING`` on ``(learner_id, card_id)`` keeps a state from being
    placed twice when an enrolment or a "learn more" races the statement: both take the
    same line in the same order.
    """
    # The range on the profile too: the planner does not carry it across the join.
    upper = "AND p.user_id <= %s AND e.learner_id <= %s" if bounded else ""
    deck_filter = "AND e.deck_id = %s" if one_deck else ""
    placed = (
        "(SELECT COUNT(*) FROM cards_reviewstate x"
        " WHERE x.learner_id = p.user_id AND x.placed_on = g.day)"
    )
    return f"""
        INSERT INTO cards_reviewstate
            (learner_id, card_id, step, due_on, placed_on, last_reviewed_at,
             created_at, updated_at)
        SELECT learner_id, card_id, 0, due_on, day, NULL, %s, %s
        FROM (
            SELECT e.learner_id AS learner_id, c.id AS card_id, g.due_on AS due_on,
                   g.day AS day, p.new_cards_per_day - {placed} AS quota,
                   ROW_NUMBER() OVER (
                       PARTITION BY e.learner_id
                       ORDER BY e.created_at, e.id, c.position, c.id
                   ) AS rn
            FROM cards_learnerprofile p
            JOIN {table} g ON g.tz = p.timezone AND g.day_start = p.day_starts_at
            JOIN cards_reviewday d
                ON d.learner_id = p.user_id AND d.study_day = g.day AND d.reviews > 0
            JOIN cards_enrollment e ON e.learner_id = p.user_id
            JOIN cards_card c ON c.deck_id = e.deck_id AND c.is_active = %s
            WHERE p.user_id > %s AND e.learner_id > %s {upper} {deck_filter}
              AND p.new_cards_per_day > {placed}
              AND NOT EXISTS (
                  SELECT 1 FROM cards_reviewstate s
                  WHERE s.learner_id = e.learner_id AND s.card_id = c.id
              )
        ) ranked
        WHERE rn <= quota
        ON CONFLICT (learner_id, card_id) DO NOTHING
    """


def place(sql: str, params: list[Any]) -> int:
    """Run one placement statement (it commits on its own); returns the rows it inserted."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        inserted: int = cursor.rowcount
    return max(inserted, 0)
