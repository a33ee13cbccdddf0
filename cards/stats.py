"""The learner's statistics (stats/ and the home page): due today, forecast, rungs, streak.

The forecast and the due count come from :func:`cards.due.counted_states` (what is due,
from the state counts); the streak from the day rows the database keeps (``ReviewDay``)
through :func:`cards.ladder.streak_days`; leeches from :func:`cards.lapses.leech_stats`.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db.models import Min

from exercises.selectors import prediction_accuracy

from . import ladder
from .due import counted_states, is_paused
from .lapses import leech_stats
from .models import ReviewDay
from .selectors import learner_profile, scheduled_states
from .services import pace

FORECAST_DAYS = 30
RETENTION_DAYS = 30
STREAK_LOOKBACK_DAYS = 3650


def learner_stats(*, learner, today: dt.date) -> dict:
    horizon = today + dt.timedelta(days=FORECAST_DAYS - 1)
    forecast = {today + dt.timedelta(days=i): 0 for i in range(FORECAST_DAYS)}
    profile = learner_profile(learner)
    # While paused, nothing falls due before the pause ends.
    paused = is_paused(learner=learner, today=today)
    end = ladder.pause_end(profile.pause_start, profile.pause_days)
    first_day = (end or today) if paused else today
    due_rows, step_rows = counted_states(learner=learner, today=today, horizon=horizon)
    # Days before today are the due count too, unless paused.
    due_today = 0
    for due_on, n in due_rows:
        if due_on <= today and not paused:
            due_today += n
        day = max(due_on, first_day)
        if day in forecast:
            forecast[day] += n
    by_step = {str(step): 0 for step in range(len(settings.STUDY_LADDER_DAYS))}
    for step, n in sorted(step_rows.items()):
        # A step the ladder lacks stands on its top rung (cards.ladder.rung).
        by_step[str(ladder.rung(step, settings.STUDY_LADDER_DAYS))] += n

    # One read of the day rows serves the retention window and the streak.
    days = _review_days(learner=learner, today=today)
    window_start = today - dt.timedelta(days=RETENTION_DAYS - 1)
    window = [(day, n, passes) for day, n, passes, _ in days if window_start <= day <= today]
    total = sum(n for _, n, _ in window)
    passed = sum(passes for _, _, passes in window)
    retention = passed / total if total else None
    waiting = pace.waiting_count(learner=learner)
    placed_today = pace.placed_on_day(learner=learner, day=today)
    # While paused nothing is studied: the pace resumes the day the pause ends.
    start = first_day - dt.timedelta(days=1) if paused else today
    new = pace.forecast_new(
        waiting=waiting,
        per_day=profile.new_cards_per_day,
        placed_today=placed_today if start == today else 0,
        days=list(forecast),
        today=start,
    )
    stats = {
        "today": today,
        "due_today": due_today,
        "reviewed_today": sum(n for day, n, _ in window if day == today),
        "streak_days": _streak(learner=learner, today=today, days=days),
        "retention_30d": None if retention is None else round(retention, 4),
        "by_step": by_step,
        "forecast": [{"date": day, "count": n, "new": new[day]} for day, n in forecast.items()],
        **leech_stats(learner=learner),
        "paused": paused,
        "waiting": waiting,
        "new_cards_per_day": profile.new_cards_per_day,
        "placed_today": placed_today,
    }
    stats["predictions_30d"] = _prediction_accuracy(learner=learner, window_start=window_start)
    return stats


def _review_days(*, learner, today: dt.date) -> list[tuple[dt.date, int, int, dt.date | None]]:
    """``(study_day, reviews, passes, min_due_before)`` of the days studied, oldest first."""
    start = today - dt.timedelta(days=STREAK_LOOKBACK_DAYS)
    return list(
        ReviewDay.objects.filter(learner=learner, study_day__gte=start, reviews__gt=0)
        .order_by("study_day")
        .values_list("study_day", "reviews", "passes", "min_due_before")
    )


def _streak(*, learner, today: dt.date, days=None) -> int:
    """Consecutive study days with a review (``ladder.streak_days``), from the day rows.

    ``days`` are the rows of ``_review_days`` when the caller has read them already.
    """
    if days is None:
        days = _review_days(learner=learner, today=today)
    if not days:
        return 0
    still_due = (
        scheduled_states(learner=learner).filter(suspended=False).aggregate(m=Min("due_on"))["m"]
    )
    profile = learner_profile(learner)
    return ladder.streak_days(
        {day: min_due for day, _, _, min_due in days},
        today=today,
        still_due=still_due,
        pause=(profile.pause_start, profile.pause_days),
    )


def _prediction_accuracy(*, learner, window_start: dt.date) -> dict:
    """Predictions made since the start of the learner's study day ``window_start``."""
    profile = learner_profile(learner)
    zone = ladder.zone_or_utc(profile.timezone)
    since = ladder.study_day_start(window_start, zone, profile.day_starts_at)
    return prediction_accuracy(owner=learner, since=since)
