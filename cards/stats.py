"""The learner's statistics (stats/ and the home page): due today, forecast, rungs, streak.

The due count and the forecast come from :func:`cards.due.due_outlook` (what is due, from
the state counts); the streak and retention from the day rows the database keeps
(``ReviewDay``), the streak through :func:`cards.ladder.streak_days`; leeches from
:func:`cards.lapses.leech_stats`; the new cards the pace would add from
:func:`cards.services.pace.forecast_new`.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db.models import Min

from exercises.selectors import prediction_accuracy

from . import ladder
from .due import DueOutlook, due_outlook
from .lapses import leech_stats
from .models import ReviewDay
from .selectors import learner_profile, scheduled_states
from .services import pace

FORECAST_DAYS = 30
RETENTION_DAYS = 30
STREAK_LOOKBACK_DAYS = 3650

# (study_day, reviews, passes, min_due_before) of a day studied: ``_review_days``.
DayRow = tuple[dt.date, int, int, dt.date | None]


def learner_stats(*, learner, today: dt.date) -> dict:
    outlook = due_outlook(learner=learner, today=today, days=FORECAST_DAYS)
    # One read of the day rows serves the retention window and the streak.
    days = _review_days(learner=learner, today=today)
    window_start = today - dt.timedelta(days=RETENTION_DAYS - 1)
    new, pace_figures = _new_cards(learner=learner, outlook=outlook)
    return {
        "today": today,
        "due_today": outlook.due_today,
        **_recent_reviews(days, today=today, window_start=window_start),
        "streak_days": _streak(learner=learner, today=today, days=days),
        "by_step": _by_rung(outlook.by_step),
        "forecast": [
            {"date": day, "count": n, "new": new[day]} for day, n in outlook.forecast.items()
        ],
        **leech_stats(learner=learner),
        "paused": outlook.paused,
        **pace_figures,
        "predictions_30d": _prediction_accuracy(learner=learner, window_start=window_start),
    }


def _by_rung(by_step: dict[int, int]) -> dict[str, int]:
    """The scheduled states per rung of the ladder, every rung named, from 0."""
    rungs = {str(step): 0 for step in range(len(settings.STUDY_LADDER_DAYS))}
    for step, n in sorted(by_step.items()):
        # A step the ladder lacks stands on its top rung (cards.ladder.rung).
        rungs[str(ladder.rung(step, settings.STUDY_LADDER_DAYS))] += n
    return rungs


def _recent_reviews(days: list[DayRow], *, today: dt.date, window_start: dt.date) -> dict:
    """``reviewed_today`` and ``retention_30d`` (passes over reviews since ``window_start``)."""
    window = [(day, n, passes) for day, n, passes, _ in days if window_start <= day <= today]
    total = sum(n for _, n, _ in window)
    passed = sum(passes for _, _, passes in window)
    return {
        "reviewed_today": sum(n for day, n, _ in window if day == today),
        "retention_30d": round(passed / total, 4) if total else None,
    }


def _new_cards(*, learner, outlook: DueOutlook) -> tuple[dict[dt.date, int], dict[str, int]]:
    """The new cards the pace would add on each forecast day, and the pace's figures:
    ``waiting``, ``new_cards_per_day``, ``placed_today``."""
    profile = learner_profile(learner)
    today = outlook.today
    waiting = pace.waiting_count(learner=learner)
    placed_today = pace.placed_on_day(learner=learner, day=today)
    # While paused nothing is studied: the pace resumes the day the pause ends.
    start = outlook.resumes_on - dt.timedelta(days=1) if outlook.paused else today
    new = pace.forecast_new(
        waiting=waiting,
        per_day=profile.new_cards_per_day,
        placed_today=placed_today if start == today else 0,
        days=list(outlook.forecast),
        today=start,
    )
    figures = {
        "waiting": waiting,
        "new_cards_per_day": profile.new_cards_per_day,
        "placed_today": placed_today,
    }
    return new, figures


def _review_days(*, learner, today: dt.date) -> list[DayRow]:
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
