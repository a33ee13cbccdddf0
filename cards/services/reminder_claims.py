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
from dataclasses import dataclass
from typing import Any

from django.db.models import F, QuerySet

from ..db import reminders as reminder_rows
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


def _as_claims(rows: list[reminder_rows.ClaimRow]) -> list[ReminderClaim]:
    return [ReminderClaim(*row) for row in rows]


def claim_new(
    *, table: str, table_params: list[Any], at: dt.datetime, after: int, up_to: int | None
) -> list[ReminderClaim]:
    """Claim a reminder for every recipient of ``table``'s groups with cards due today and
    no reminder row yet (``cards.db.reminders.claim_new``)."""
    return _as_claims(
        reminder_rows.claim_new(
            table=table, table_params=table_params, at=at, after=after, up_to=up_to
        )
    )


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

    Of two passes racing here only the first re-stamps (and sends) a given row. The count
    is taken afresh, as the learner may have reviewed since the claim; a claim with
    nothing due any more is left alone (and sent should cards fall due again that day).
    """
    return _as_claims(
        reminder_rows.reclaim_stale(
            table=table,
            table_params=table_params,
            at=at,
            stale_before=at - retry_after,
            after=after,
            up_to=up_to,
        )
    )
