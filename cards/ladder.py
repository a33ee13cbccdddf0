"""The review ladder as pure functions: no Django, no clock.

A learner's *study day* is the local date in their time zone after shifting
back by ``day_starts_at`` hours, so a review at 02:30 with a 04:00 day start
still belongs to the previous day. Intervals follow ``ladder`` (by default
``DEFAULT_LADDER``, the one place it is written): a pass climbs one rung (capped at
the top), a fail returns to rung 0, and the next due date counts from the day of review.

A ladder is set by ``STUDY_LADDER_DAYS`` and read by :func:`parse_ladder`: at least two
rungs of whole days, each longer than the one before. A card whose step the ladder
lacks (the setting shortened after it climbed) stands on the top rung, as py-fsrs
treats a step past a shortened list of learning steps: its due date stays as it was,
its interval reads as the top rung's, a pass keeps it at the top and a fail returns it
to rung 0 (:func:`rung`). Its stored step is only rewritten by its next review, so a
ladder lengthened again before then finds the card where it was.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal
from zoneinfo import ZoneInfo

DEFAULT_LADDER: tuple[int, ...] = (1, 3, 7, 14, 30)
Result = Literal["pass", "fail"]

# A rung longer than this is a mistake in the setting (days; ten years).
LONGEST_RUNG_DAYS = 3650


def ladder_problem(days: Iterable[object]) -> str | None:
    """What is wrong with ``days`` as a ladder, or None when it is one."""
    rungs = list(days)
    if len(rungs) < 2:
        return f"it has {len(rungs)} rung{'s' * (len(rungs) != 1)}; a ladder needs at least 2"
    whole: list[int] = []
    for position, rung_days in enumerate(rungs, start=1):
        # type() rather than isinstance(): True is an int, and not a number of days.
        if type(rung_days) is not int or not 1 <= rung_days <= LONGEST_RUNG_DAYS:
            return (
                f"rung {position} is {rung_days!r}; each rung is a whole number of days "
                f"from 1 to {LONGEST_RUNG_DAYS}"
            )
        whole.append(rung_days)
    for position, (lower, upper) in enumerate(itertools.pairwise(whole), start=2):
        if upper <= lower:
            return (
                f"rung {position} ({_days(upper)}) is not longer than rung {position - 1} "
                f"({_days(lower)}); each rung must be longer than the one before"
            )
    return None


def _days(n: int) -> str:
    return f"{n} day{'s' * (n != 1)}"


def parse_ladder(text: str) -> tuple[int, ...]:
    """The ladder written as comma-separated days (``"1,3,7,14,30"``).

    Raises ``ValueError`` saying what is wrong: a part that is not a whole number, too
    few rungs, a rung out of range or not longer than the one before.
    """
    parts = [part.strip() for part in text.split(",")]
    rungs: list[int] = []
    for position, part in enumerate(parts, start=1):
        if not (part.isascii() and part.isdigit()):
            raise ValueError(
                f"rung {position} is {part!r}; write whole days separated by commas, "
                f"e.g. {describe(DEFAULT_LADDER, sep=',')}"
            )
        rungs.append(int(part))
    problem = ladder_problem(rungs)
    if problem is not None:
        raise ValueError(problem)
    return tuple(rungs)


def describe(ladder: tuple[int, ...] = DEFAULT_LADDER, *, sep: str = ", ") -> str:
    """The ladder's days as text: ``"1, 3, 7, 14, 30"``."""
    return sep.join(str(days) for days in ladder)


def rung(step: int, ladder: tuple[int, ...] = DEFAULT_LADDER) -> int:
    """The rung a card at ``step`` stands on: its step, or the top rung when the ladder
    has fewer rungs than that (see the module docstring)."""
    if step < 0:
        raise ValueError(f"step must be 0 or more, not {step}")
    return min(step, len(ladder) - 1)


def interval_days(step: int, ladder: tuple[int, ...] = DEFAULT_LADDER) -> int:
    """The interval of the rung a card at ``step`` stands on."""
    return ladder[rung(step, ladder)]


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


def zone_or_utc(name: str) -> ZoneInfo:
    """The time zone called ``name``, or UTC when the zone database does not know it.

    A name that no longer resolves (edited in the database, dropped from tzdata) must
    not fail every request of its learner: an unknown time zone studies on UTC. The
    caller can tell by ``zone.key != name``.
    """
    try:
        return ZoneInfo(name)
    # ZoneInfoNotFoundError is a KeyError; a malformed name is a ValueError, and one
    # that reaches a folder of the zone database (e.g. "America") an OSError.
    except (ValueError, OSError, KeyError):
        return ZoneInfo("UTC")


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


def pause_end(start: dt.date | None, days: int) -> dt.date | None:
    """The first study day after a pause of ``days`` days from ``start``, or None without one.

    A pause covers the study days ``[start, pause_end)``: no card falls due in it, no
    reminder goes out, and a day in it never breaks a streak. No ``start``, or no days
    (a pause ended on the day it began), is no pause.
    """
    if start is None or days <= 0:
        return None
    return start + dt.timedelta(days=days)


def in_pause(day: dt.date, start: dt.date | None, days: int) -> bool:
    """Whether study day ``day`` falls inside the pause of ``days`` days from ``start``."""
    end = pause_end(start, days)
    return start is not None and end is not None and start <= day < end


@dataclass(frozen=True)
class Schedule:
    step: int
    interval_days: int
    due_on: dt.date


def first_schedule(today: dt.date, ladder: tuple[int, ...] = DEFAULT_LADDER) -> Schedule:
    """Where a card lands when a learner starts it: rung 0, due after ``ladder[0]`` days."""
    return Schedule(step=0, interval_days=ladder[0], due_on=today + dt.timedelta(days=ladder[0]))


def next_step(step: int, result: Result, ladder: tuple[int, ...] = DEFAULT_LADDER) -> int:
    """The step after a review: a pass climbs one rung from the one the card stands on
    (:func:`rung`), capped at the top; a fail returns to 0."""
    current = rung(step, ladder)
    if result == "pass":
        return min(current + 1, len(ladder) - 1)
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


def streak_days(
    days: Mapping[dt.date, dt.date | None],
    *,
    today: dt.date,
    still_due: dt.date | None,
    pause: tuple[dt.date | None, int] | None = None,
) -> int:
    """Consecutive study days with a review, ending today (or yesterday while today is open).

    ``days`` maps each study day with reviews (net of undos) to the earliest
    ``due_before`` among them: every card reviewed that day had waited since then.
    ``still_due`` is the earliest due date of a card not yet reviewed, ``pause`` the
    learner's pause as ``(start, days)`` (:func:`in_pause`).

    A day without reviews is skipped, not a break, when nothing was due on it: on a
    paused day, or when no card was waiting (``still_due`` after it, and every later
    review's card due after it). Today never breaks the streak.
    """
    if not days:
        return 0
    one_day = dt.timedelta(days=1)
    first_day = min(days)
    # The earliest due_before among reviews after the day being walked, kept going back.
    waiting_since = _earliest((due for day, due in days.items() if day > today), None)
    streak = 0
    day = today
    while day >= first_day:
        if day in days:
            streak += 1
            waiting_since = _earliest((days[day],), waiting_since)
        elif day != today and not (pause is not None and in_pause(day, *pause)):
            waited = (still_due is not None and still_due <= day) or (
                waiting_since is not None and waiting_since <= day
            )
            if waited:
                break
        day -= one_day
    return streak


def _earliest(dates: Iterable[dt.date | None], start: dt.date | None) -> dt.date | None:
    earliest = start
    for date in dates:
        if date is not None and (earliest is None or date < earliest):
            earliest = date
    return earliest
