"""Who is due a daily review reminder, and claiming reminders: one row per learner and
study day, inserted (or taken over) by exactly one pass. The pass starts, and sends,
in ``reminders`` (its docstring walks every step).

When a reminder is due
    A learner's study day ``D`` starts at local ``day_starts_at`` o'clock. Its
    reminder is due from the first time the local clock reads ``reminder_hour``
    on or after that start, until the day ends. With ``reminder_hour >=
    day_starts_at`` that is ``reminder_hour`` on the calendar date ``D``; with
    ``reminder_hour < day_starts_at`` (say 02:00 with days starting at 04:00) it
    is ``reminder_hour`` on the next calendar date, still inside study day ``D``.
    Equivalently: the local wall time, shifted back by ``day_starts_at`` hours,
    is at least ``(reminder_hour - day_starts_at) mod 24`` hours into ``D``.
    Wall time makes DST changes behave as a learner expects: a reminder hour
    skipped by a spring-forward goes out at the first pass after the gap, and a
    repeated hour in the autumn sends once. (A reminder hour that is skipped and
    also the last hour before the day starts has no instant in that study day;
    that one reminder is not sent.) A learner gets a reminder only with
    ``reminders`` on, a confirmed e-mail address, an active account, and at least
    one card in the due queue on ``D`` (``cards.due.queue_states``: none while the
    learner's pause covers ``D``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import F, QuerySet

from ..db.queue import due_count_sql, in_pause_sql
from ..ladder import reminder_day
from ..models import LearnerProfile
from .scheduling import zone_or_utc


@dataclass(frozen=True)
class ReminderClaim:
    reminder_id: int
    learner_id: int
    study_day: dt.date
    due_count: int


Group = tuple[str, int, int, dt.date]


def _wanting_reminders() -> QuerySet[LearnerProfile]:
    return LearnerProfile.objects.filter(reminders=True, user__is_active=True).exclude(
        user__email=""
    )


def recipients() -> QuerySet[LearnerProfile]:
    # Only an address the learner confirmed through its link receives reminders.
    return _wanting_reminders().filter(confirmed_email=F("user__email"))


def awaiting_confirmation() -> QuerySet[LearnerProfile]:
    """Learners who want reminders but get none until they confirm their address."""
    return (
        _wanting_reminders()
        .exclude(confirmed_email=F("user__email"))
        .select_related("user")
        .order_by("user_id")
    )


def due_groups(*, at: dt.datetime, after: int = 0, up_to: int | None = None) -> list[Group]:
    """``(timezone, day_starts_at, reminder_hour, study_day)`` of every group whose reminder is due.

    Among the recipients with ``after < id <= up_to`` (all by default): a chunk looks
    at its own learners only, so a pass costs one scan of the recipients, not one
    per chunk. An unknown zone name counts as UTC (:func:`zone_or_utc`), as for placement.
    """
    among = recipients().filter(user_id__gt=after)
    if up_to is not None:
        among = among.filter(user_id__lte=up_to)
    triples = among.values_list("timezone", "day_starts_at", "reminder_hour").distinct()
    groups = []
    for tz_name, day_starts_at, reminder_hour in triples:
        day = reminder_day(at, zone_or_utc(tz_name), day_starts_at, reminder_hour)
        if day is not None:
            groups.append((tz_name, day_starts_at, reminder_hour, day))
    return groups


def _as_claims(rows: Sequence[Sequence[Any]]) -> list[ReminderClaim]:
    # SQLite hands dates back as ISO strings from a raw cursor.
    return [
        ReminderClaim(
            reminder_id=row[0],
            learner_id=row[1],
            study_day=row[2] if isinstance(row[2], dt.date) else dt.date.fromisoformat(row[2]),
            due_count=row[3],
        )
        for row in rows
    ]


def claim_new(
    *, table: str, table_params: list[Any], at: dt.datetime, after: int, up_to: int | None
) -> list[ReminderClaim]:
    ops = connection.ops
    user_table = get_user_model()._meta.db_table
    upper = "AND p.user_id <= %s" if up_to is not None else ""
    sql = f"""
        INSERT INTO cards_reminder (learner_id, study_day, due_count, sent_at, created_at)
        SELECT learner_id, study_day, due_count, NULL, %s FROM (
            SELECT p.user_id AS learner_id, g.study_day AS study_day,
                {due_count_sql("p.user_id", "g.study_day")} AS due_count
            FROM cards_learnerprofile p
            JOIN {user_table} u ON u.id = p.user_id
            JOIN {table} g ON g.tz = p.timezone AND g.day_start = p.day_starts_at
                AND g.hour = p.reminder_hour
            WHERE p.reminders = %s AND u.is_active = %s AND u.email <> '' AND p.confirmed_email = u.email
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
    params = [ops.adapt_datetimefield_value(at), True, *table_params, True, True, after]
    if up_to is not None:
        params.append(up_to)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return _as_claims(cursor.fetchall())


def reclaim_stale(
    *,
    table: str,
    table_params: list[Any],
    at: dt.datetime,
    retry_after: dt.timedelta,
    after: int = 0,
    up_to: int | None = None,
) -> list[ReminderClaim]:
    """Take over claims left unsent for ``retry_after``, for reminders still due today.

    The condition on ``created_at`` is re-checked under the row lock, so of two
    passes racing here only the first re-stamps (and sends) a given row. The count
    is taken afresh, as the learner may have reviewed since the claim; a claim with
    nothing due any more is left alone (and sent should cards fall due again that day).
    """
    ops = connection.ops
    user_table = get_user_model()._meta.db_table
    learner, day = "cards_reminder.learner_id", "cards_reminder.study_day"
    upper = "AND cards_reminder.learner_id <= %s" if up_to is not None else ""
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
                AND p.reminders = %s AND u.is_active = %s AND u.email <> '' AND p.confirmed_email = u.email
          )
        RETURNING id, learner_id, study_day, due_count
    """
    params = [
        ops.adapt_datetimefield_value(at),
        True,
        ops.adapt_datetimefield_value(at - retry_after),
        after,
        *([up_to] if up_to is not None else []),
        True,
        *table_params,
        True,
        True,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return _as_claims(cursor.fetchall())
