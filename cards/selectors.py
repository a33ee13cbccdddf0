"""Reads of the study core. Each returns a queryset or plain data without N+1 queries."""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db.models import Count, Exists, Min, OuterRef, Prefetch, Q, QuerySet

from exercises.selectors import prediction_accuracy

from . import ladder
from .models import Card, Deck, Enrollment, LearnerProfile, ReviewLog, ReviewState, Tag

logger = logging.getLogger(__name__)

FORECAST_DAYS = 30
RETENTION_DAYS = 30
STREAK_LOOKBACK_DAYS = 3650


def learner_profile(user) -> LearnerProfile:
    try:
        return user.profile
    except LearnerProfile.DoesNotExist:
        profile, _ = LearnerProfile.objects.get_or_create(user=user)
        return profile


def learner_today(*, learner, at: dt.datetime) -> dt.date:
    profile = learner_profile(learner)
    try:
        return ladder.study_day(at, profile.timezone, profile.day_starts_at)
    except (ValueError, OSError, KeyError):  # ZoneInfoNotFoundError is a KeyError
        pass
    # A time zone name that no longer resolves (edited in the database, or dropped
    # from tzdata): study on UTC rather than fail every request of this learner.
    logger.warning(
        "Learner %s has an unknown time zone %r; using UTC", learner.pk, profile.timezone
    )
    return ladder.study_day(at, "UTC", profile.day_starts_at)


def scheduled_states(*, learner) -> QuerySet[ReviewState]:
    """The learner's states for active cards of decks they are enrolled in."""
    return ReviewState.objects.filter(
        learner=learner,
        card__is_active=True,
        card__deck__enrollments__learner=learner,
    )


def due_reviews(*, learner, today: dt.date) -> QuerySet[ReviewState]:
    """Due states, oldest due first, with the card, its deck and its tags loaded."""
    return (
        scheduled_states(learner=learner)
        .filter(due_on__lte=today)
        .select_related("card", "card__deck")
        .prefetch_related(Prefetch("card__tags", queryset=Tag.objects.only("name")))
        .order_by("due_on", "id")
    )


def due_count(*, learner, today: dt.date) -> int:
    return scheduled_states(learner=learner).filter(due_on__lte=today).count()


def next_due_on(*, learner) -> dt.date | None:
    return scheduled_states(learner=learner).aggregate(first=Min("due_on"))["first"]


def scheduled_state(*, learner, card_id: int) -> ReviewState | None:
    return scheduled_states(learner=learner).select_related("card").filter(card_id=card_id).first()


def decks_for(*, learner) -> QuerySet[Deck]:
    return Deck.objects.annotate(
        card_count=Count("cards", filter=Q(cards__is_active=True)),
        enrolled=Exists(Enrollment.objects.filter(deck=OuterRef("pk"), learner=learner)),
    ).order_by("title")


def cards_visible_to(*, user) -> QuerySet[Card]:
    cards = Card.objects.select_related("deck").prefetch_related(
        Prefetch("tags", queryset=Tag.objects.only("name"))
    )
    if not user.is_staff:
        cards = cards.filter(is_active=True)
    return cards.order_by("deck__slug", "position", "id")


def review_history(*, learner, card_id: int | None = None) -> QuerySet[ReviewLog]:
    logs = ReviewLog.objects.filter(learner=learner)
    if card_id is not None:
        logs = logs.filter(card_id=card_id)
    return logs.order_by("-reviewed_at", "-id")


def review_calendar(*, learner, start: dt.date, end: dt.date) -> dict[dt.date, int]:
    rows = (
        ReviewLog.objects.filter(learner=learner, study_day__gte=start, study_day__lte=end)
        .values("study_day")
        .annotate(n=Count("id"))
    )
    return {row["study_day"]: row["n"] for row in rows}


def _streak(*, learner, today: dt.date) -> int:
    """Consecutive study days with a review, ending today (or yesterday while today is open).

    A day without reviews is skipped, not a break, when nothing was due on it. A
    card was due on day d if it is due now with ``due_on <= d``, or if it was
    reviewed later with ``due_before <= d`` (it waited since then).
    """
    start = today - dt.timedelta(days=STREAK_LOOKBACK_DAYS)
    per_day = {
        row["study_day"]: row["min_due"]
        for row in ReviewLog.objects.filter(learner=learner, study_day__gte=start)
        .values("study_day")
        .annotate(min_due=Min("due_before"))
    }
    if not per_day:
        return 0
    first_day = min(per_day)
    still_due = scheduled_states(learner=learner).aggregate(m=Min("due_on"))["m"]
    # Smallest due_before among reviews after day d, maintained while walking back.
    min_due_later = None
    for day in sorted((d for d in per_day if d > today), reverse=True):
        due = per_day[day]
        min_due_later = due if min_due_later is None else min(min_due_later, due)

    streak = 0
    day = today
    while day >= first_day:
        if day in per_day:
            streak += 1
        elif day != today:
            waited = (still_due is not None and still_due <= day) or (
                min_due_later is not None and min_due_later <= day
            )
            if waited:
                break
        if day in per_day:
            due = per_day[day]
            min_due_later = due if min_due_later is None else min(min_due_later, due)
        day -= dt.timedelta(days=1)
    return streak


def learner_stats(*, learner, today: dt.date) -> dict:
    states = scheduled_states(learner=learner)
    horizon = today + dt.timedelta(days=FORECAST_DAYS - 1)
    forecast = {today + dt.timedelta(days=i): 0 for i in range(FORECAST_DAYS)}
    due_today = 0
    for row in states.filter(due_on__lte=horizon).values("due_on").annotate(n=Count("id")):
        day = max(row["due_on"], today)
        forecast[day] += row["n"]
        if row["due_on"] <= today:
            due_today += row["n"]

    by_step = {str(step): 0 for step in range(len(settings.STUDY_LADDER_DAYS))}
    for row in states.values("step").annotate(n=Count("id")):
        by_step[str(row["step"])] = row["n"]

    window_start = today - dt.timedelta(days=RETENTION_DAYS - 1)
    recent = ReviewLog.objects.filter(
        learner=learner, study_day__gte=window_start, study_day__lte=today
    ).aggregate(
        total=Count("id"),
        passed=Count("id", filter=Q(result=ReviewLog.Result.PASS)),
        today=Count("id", filter=Q(study_day=today)),
    )
    retention = recent["passed"] / recent["total"] if recent["total"] else None
    stats = {
        "today": today,
        "due_today": due_today,
        "reviewed_today": recent["today"],
        "streak_days": _streak(learner=learner, today=today),
        "retention_30d": None if retention is None else round(retention, 4),
        "by_step": by_step,
        "forecast": [{"date": day, "count": n} for day, n in forecast.items()],
    }
    stats["predictions_30d"] = _prediction_accuracy(learner=learner, window_start=window_start)
    return stats


def _prediction_accuracy(*, learner, window_start: dt.date) -> dict:
    """Predictions made since the start of the learner's study day ``window_start``."""
    profile = learner_profile(learner)
    try:
        since = ladder.study_day_start(window_start, profile.timezone, profile.day_starts_at)
    except (ValueError, OSError, KeyError):  # an unknown time zone studies on UTC
        since = ladder.study_day_start(window_start, "UTC", profile.day_starts_at)
    return prediction_accuracy(owner=learner, since=since)
