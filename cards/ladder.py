"""The review ladder as pure functions: no Django, no clock.

A learner's *study day* is the local date in their time zone after shifting
back by ``day_starts_at`` hours, so a review at 02:30 with a 04:00 day start
still belongs to the previous day. Intervals follow ``ladder`` (by default
1, 3, 7, 14, 30 days): a pass climbs one rung (capped at the top), a fail
returns to rung 0, and the next due date counts from the day of review.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal
from zoneinfo import ZoneInfo

DEFAULT_LADDER: tuple[int, ...] = (1, 3, 7, 14, 30)
Result = Literal["pass", "fail"]


def study_day(at: dt.datetime, tz: str | dt.tzinfo, day_starts_at: int) -> dt.date:
    """The learner's study day for the aware instant ``at``.

    Converting to local wall time first and subtracting hours second keeps the
    boundary at the same local hour on both sides of a DST change.
    """
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError("study_day needs an aware datetime")
    if not 0 <= day_starts_at <= 23:
        raise ValueError("day_starts_at must be between 0 and 23")
    zone = ZoneInfo(tz) if isinstance(tz, str) else tz
    local = at.astimezone(zone).replace(tzinfo=None)
    return (local - dt.timedelta(hours=day_starts_at)).date()


def study_day_start(day: dt.date, tz: str | dt.tzinfo, day_starts_at: int) -> dt.datetime:
    """The aware instant at which study day ``day`` begins (local ``day_starts_at`` o'clock).

    A start hour that falls in a DST gap resolves to the first valid instant after it.
    """
    zone = ZoneInfo(tz) if isinstance(tz, str) else tz
    naive = dt.datetime.combine(day, dt.time(day_starts_at))
    local = naive.replace(tzinfo=zone)
    # Round-trip through UTC: a non-existent wall time comes back shifted.
    roundtrip = local.astimezone(dt.UTC).astimezone(zone)
    if roundtrip.replace(tzinfo=None) != naive:
        local = naive.replace(tzinfo=zone, fold=1)
    return local


def reminder_day(
    at: dt.datetime, tz: str | dt.tzinfo, day_starts_at: int, reminder_hour: int
) -> dt.date | None:
    """The study day whose reminder is due at ``at``, or None while it is not yet due.

    The reminder of study day ``D`` is due from the first time the local clock reads
    ``reminder_hour`` on or after the day's start until the day ends: the wall time,
    shifted back by ``day_starts_at`` hours as in :func:`study_day`, is at least
    ``(reminder_hour - day_starts_at) mod 24`` hours into ``D``. Wall time makes a
    reminder hour skipped by a spring-forward fall due at the first instant after the
    gap, and a repeated autumn hour count once.
    """
    if not 0 <= reminder_hour <= 23:
        raise ValueError("reminder_hour must be between 0 and 23")
    day = study_day(at, tz, day_starts_at)
    zone = ZoneInfo(tz) if isinstance(tz, str) else tz
    shifted = at.astimezone(zone).replace(tzinfo=None) - dt.timedelta(hours=day_starts_at)
    into_day = shifted - dt.datetime.combine(day, dt.time())
    if into_day >= dt.timedelta(hours=(reminder_hour - day_starts_at) % 24):
        return day
    return None


@dataclass(frozen=True)
class Schedule:
    step: int
    interval_days: int
    due_on: dt.date


def first_schedule(today: dt.date, ladder: tuple[int, ...] = DEFAULT_LADDER) -> Schedule:
    """Where a card lands when a learner starts it: rung 0, due after ``ladder[0]`` days."""
    return Schedule(step=0, interval_days=ladder[0], due_on=today + dt.timedelta(days=ladder[0]))


def next_step(step: int, result: Result, ladder: tuple[int, ...] = DEFAULT_LADDER) -> int:
    if not 0 <= step < len(ladder):
        raise ValueError(f"step must be between 0 and {len(ladder) - 1}")
    if result == "pass":
        return min(step + 1, len(ladder) - 1)
    if result == "fail":
        return 0
    raise ValueError("result must be 'pass' or 'fail'")


def review(
    step: int, result: Result, today: dt.date, ladder: tuple[int, ...] = DEFAULT_LADDER
) -> Schedule:
    """The schedule after reviewing a card at ``step`` with ``result`` on study day ``today``."""
    new_step = next_step(step, result, ladder)
    interval = ladder[new_step]
    return Schedule(
        step=new_step, interval_days=interval, due_on=today + dt.timedelta(days=interval)
    )


def is_due(due_on: dt.date, today: dt.date) -> bool:
    return due_on <= today
