"""The reminder pass's statements: claim, take over and renew a day's reminder rows.

Each statement is set-based and race-safe on PostgreSQL and SQLite alike: a claim is
``INSERT ... ON CONFLICT DO NOTHING``, a takeover and a renewal are conditional
``UPDATE``s on the claim time, and all three return the rows they moved. The rules of
who is due a reminder, and when, are in ``cards.services.reminder_claims``; the pass
that calls these is ``cards.services.reminders``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection

from .queue import due_count_sql, in_pause_sql

# (reminder id, learner id, study day, due count), as every statement here returns them.
ClaimRow = tuple[int, int, dt.date, int]


def recipient_sql(profile: str, user: str) -> tuple[str, list[Any]]:
    """``cards.services.reminder_claims.recipients`` as an SQL condition, with its parameters.

    Over the ``cards_learnerprofile`` row ``profile`` and its user's row ``user``:
    reminders on, an active account, and an address the learner confirmed. The queryset
    is the definition; ``tests/cards/test_rule_forms.py`` holds this equal to it.
    """
    condition = (
        f"{profile}.reminders = %s AND {user}.is_active = %s AND {user}.email <> '' "
        f"AND {profile}.confirmed_email = {user}.email"
    )
    return condition, [True, True]


def _claim_rows(rows: Sequence[Sequence[Any]]) -> list[ClaimRow]:
    # A raw cursor on SQLite hands dates back as ISO strings; PostgreSQL as dates.
    return [
        (
            row[0],
            row[1],
            row[2] if isinstance(row[2], dt.date) else dt.date.fromisoformat(row[2]),
            row[3],
        )
        for row in rows
    ]


def _returning(sql: str, params: list[Any]) -> list[ClaimRow]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return _claim_rows(cursor.fetchall())


def claim_new(
    *, table: str, table_params: list[Any], at: dt.datetime, after: int, up_to: int | None
) -> list[ClaimRow]:
    """Insert a claim for each recipient in ``table``'s groups with cards due and none yet.

    ``table`` is a VALUES list of ``(tz, day_start, hour, study_day)`` groups with its
    own parameters; recipients are learners ``after < id <= up_to``.
    """
    user_table = get_user_model()._meta.db_table
    upper = "AND p.user_id <= %s" if up_to is not None else ""
    recipient, recipient_params = recipient_sql("p", "u")
    sql = f"""
        INSERT INTO cards_reminder (learner_id, study_day, due_count, sent_at, created_at)
        SELECT learner_id, study_day, due_count, NULL, %s FROM (
            SELECT p.user_id AS learner_id, g.study_day AS study_day,
                {due_count_sql("p.user_id", "g.study_day")} AS due_count
            FROM cards_learnerprofile p
            JOIN {user_table} u ON u.id = p.user_id
            JOIN {table} g ON g.tz = p.timezone AND g.day_start = p.day_starts_at
                AND g.hour = p.reminder_hour
            WHERE {recipient}
              AND p.user_id > %s {upper}
              AND NOT {in_pause_sql("p", "g.study_day")}
              AND NOT EXISTS (
                  SELECT 1 FROM cards_reminder r
                  WHERE r.learner_id = p.user_id AND r.study_day = g.study_day
              )
        ) candidates
        WHERE due_count > 0
        ON CONFLICT (learner_id, study_day) DO NOTHING
        RETURNING id, learner_id, study_day, due_count
    """
    params = [
        connection.ops.adapt_datetimefield_value(at),
        True,
        *table_params,
        *recipient_params,
        after,
    ]
    if up_to is not None:
        params.append(up_to)
    return _returning(sql, params)


def reclaim_stale(
    *,
    table: str,
    table_params: list[Any],
    at: dt.datetime,
    stale_before: dt.datetime,
    after: int,
    up_to: int | None,
) -> list[ClaimRow]:
    """Re-stamp at ``at`` the unsent claims made before ``stale_before`` that are still due.

    The condition on ``created_at`` is re-checked under the row lock, so of two
    passes racing here only the first re-stamps a given row. The due count is taken
    afresh; a claim with nothing due any more is left alone.
    """
    ops = connection.ops
    user_table = get_user_model()._meta.db_table
    learner, day = "cards_reminder.learner_id", "cards_reminder.study_day"
    upper = "AND cards_reminder.learner_id <= %s" if up_to is not None else ""
    recipient, recipient_params = recipient_sql("p", "u")
    sql = f"""
        UPDATE cards_reminder
        SET created_at = %s, due_count = {due_count_sql(learner, day)}
        WHERE sent_at IS NULL AND created_at < %s
          AND cards_reminder.learner_id > %s {upper}
          AND {due_count_sql(learner, day)} > 0
          AND EXISTS (
              SELECT 1 FROM cards_learnerprofile p
              JOIN {user_table} u ON u.id = p.user_id
              JOIN {table} g ON g.tz = p.timezone AND g.day_start = p.day_starts_at
                  AND g.hour = p.reminder_hour
              WHERE p.user_id = cards_reminder.learner_id
                AND g.study_day = cards_reminder.study_day
                AND {recipient}
          )
        RETURNING id, learner_id, study_day, due_count
    """
    params = [
        ops.adapt_datetimefield_value(at),
        True,
        ops.adapt_datetimefield_value(stale_before),
        after,
        *([up_to] if up_to is not None else []),
        True,
        *table_params,
        *recipient_params,
    ]
    return _returning(sql, params)


def renew(reminder_ids: list[int], *, lease: dt.datetime, now: dt.datetime) -> set[int]:
    """Move the claim time of the rows still held under ``lease`` to ``now``; their ids.

    A compare-and-set on the claim time: a row another pass has taken over (its
    ``created_at`` changed) or sent is not renewed and drops out.
    """
    if not reminder_ids:
        return set()
    ops = connection.ops
    marks = ", ".join(["%s"] * len(reminder_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE cards_reminder SET created_at = %s
            WHERE id IN ({marks}) AND sent_at IS NULL AND created_at = %s
            RETURNING id
            """,
            [
                ops.adapt_datetimefield_value(now),
                *reminder_ids,
                ops.adapt_datetimefield_value(lease),
            ],
        )
        return {row[0] for row in cursor.fetchall()}
