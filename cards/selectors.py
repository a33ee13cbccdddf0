# One module on purpose: every count, page, forecast and statistic answers to queue_states.
"""Reads of the study core. Each returns a queryset or plain data without N+1 queries."""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import (
    Count,
    Exists,
    Min,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.expressions import RawSQL

from exercises.selectors import prediction_accuracy

from . import ladder
from .db.compiled import CompiledQuery
from .models import (
    Card,
    Deck,
    Enrollment,
    ExerciseBinding,
    LapseCount,
    LearnerProfile,
    Report,
    ReviewDay,
    ReviewLog,
    ReviewState,
    ReviewStateCount,
    Tag,
)

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
    zone = ladder.zone_or_utc(profile.timezone)
    if zone.key != profile.timezone:
        logger.warning(
            "Learner %s has an unknown time zone %r; using UTC", learner.pk, profile.timezone
        )
    return ladder.study_day(at, zone, profile.day_starts_at)


def scheduled_states(*, learner) -> QuerySet[ReviewState]:
    """The learner's states for active cards of decks they are enrolled in.

    ``scheduled`` says so, kept by the services that (de)activate cards and
    (un)enrol learners: no join to cards or enrolments.
    """
    return ReviewState.objects.filter(learner=learner, scheduled=True)


# --- The learner's controls on the queue: suspend, bury, pause ---------------------


def pause_end(profile: LearnerProfile) -> dt.date | None:
    """The first study day after the learner's pause, or None without one."""
    if profile.pause_start is None or profile.pause_days <= 0:
        return None
    return profile.pause_start + dt.timedelta(days=profile.pause_days)


def is_paused(*, learner, today: dt.date) -> bool:
    profile = learner_profile(learner)
    start, end = profile.pause_start, pause_end(profile)
    return start is not None and end is not None and start <= today < end


def queue_states(*, learner, today: dt.date) -> QuerySet[ReviewState]:
    """The due queue's rows: scheduled, due, not suspended, not buried today, not paused.

    The one place that says what is due: the review page and ``reviews/due/`` read it;
    the due count and the forecast sum ``ReviewStateCount`` (kept by triggers) the same
    way, and tests hold them equal to it (``tests/cards/test_due_compiled.py``,
    ``tests/cards/test_state_counts.py``).
    """
    if is_paused(learner=learner, today=today):
        return ReviewState.objects.none()
    return (
        scheduled_states(learner=learner)
        .filter(due_on__lte=today, suspended=False)
        .exclude(buried_on=today)
    )


def suspended_states(*, learner) -> QuerySet[ReviewState]:
    return (
        scheduled_states(learner=learner)
        .filter(suspended=True)
        .select_related("card", "card__deck")
        .order_by("card__deck__title", "card__position", "card_id")
    )


def leech_card_ids(*, learner, card_ids=None) -> set[int]:
    """Cards the learner has failed ``STUDY_LEECH_LAPSES`` times or more, net of undos.

    ``card_ids`` may be a list or a queryset of ids (kept in SQL). Read from the lapse
    counts through ``(learner, n)``: the learner's leeches only, not their log.
    """
    leeches = LapseCount.objects.filter(learner=learner, n__gte=settings.STUDY_LEECH_LAPSES)
    if card_ids is not None:
        if not isinstance(card_ids, QuerySet):
            card_ids = list(card_ids)
        leeches = leeches.filter(card_id__in=card_ids)
    return set(leeches.values_list("card_id", flat=True))


def _lapses_sql() -> RawSQL:
    """The learner's lapses of the row's card: failed reviews net of undos, as one column.

    Written out (rather than an ORM subquery) because the due page builds it on
    every request; one row of the lapse counts, through their ``(learner, card)`` key.
    """
    return RawSQL(
        "COALESCE((SELECT c.n FROM cards_lapsecount c "
        'WHERE c.learner_id = "cards_reviewstate"."learner_id" '
        'AND c.card_id = "cards_reviewstate"."card_id"), 0)',
        (),
    )


def reports_of(*, learner) -> QuerySet[Report]:
    return Report.objects.filter(learner=learner).order_by("-created_at", "-id")


def due_reviews(*, learner, today: dt.date) -> QuerySet[ReviewState]:
    """Due states, oldest due first, with the card, its deck and its tags loaded."""
    return (
        queue_states(learner=learner, today=today)
        .select_related("card", "card__deck")
        .prefetch_related(Prefetch("card__tags", queryset=Tag.objects.only("name")))
        .order_by("due_on", "id")
    )


def due_count(*, learner, today: dt.date) -> int:
    """How many cards are due: ``queue_states(...).count()``, read from the state counts.

    The counts table (kept by triggers) sums the unsuspended scheduled states due by
    ``today`` in one row per due date and rung; today's buried ones, few, are taken off
    through their partial index. Its cost follows the learner's days, not their cards.
    """
    if is_paused(learner=learner, today=today):
        return 0
    with connection.cursor() as cursor:
        cursor.execute(_DUE_COUNT_SQL, [learner.pk, today, learner.pk, today, today])
        (count,) = cursor.fetchone()
    return int(count)


_DUE_COUNT_SQL = f"""
    SELECT COALESCE((
        SELECT SUM(n) FROM {ReviewStateCount._meta.db_table}
        WHERE learner_id = %s AND NOT suspended AND due_on <= %s
    ), 0) - (
        SELECT COUNT(*) FROM {ReviewState._meta.db_table}
        WHERE learner_id = %s AND buried_on = %s AND scheduled AND NOT suspended
          AND due_on <= %s
    )
"""


# Separates tag names in SQLite's group_concat; a slug never contains it.
_TAG_SEPARATOR = "\x1f"
DUE_PAGE_FIELDS = (
    "id",
    "step",
    "due_on",
    "card_id",
    "card__deck__slug",
    "card__key",
    "card__kind",
    "card__prompt",
    "card__answer",
    "card__exercise",
    "card__position",
    "card__is_active",
    "card__created_at",
    "card__updated_at",
    "card__generation_error",
)


def _tag_names_sql() -> RawSQL:
    """The card's tag names, sorted, as one column of the page query (no second query)."""
    join = (
        "FROM cards_tag t JOIN cards_card_tags ct ON ct.tag_id = t.id "
        'WHERE ct.card_id = "cards_reviewstate"."card_id"'
    )
    if connection.vendor == "postgresql":
        return RawSQL(f"ARRAY(SELECT t.name {join} ORDER BY t.name)", ())
    return RawSQL(
        f"(SELECT group_concat(name, char(31)) FROM (SELECT t.name {join} ORDER BY t.name))", ()
    )


def due_page_query(*, learner, today: dt.date, from_end: bool = False) -> QuerySet:
    """The due queue as page rows (card fields, tag names, lapses, today's binding), unsliced.

    Oldest due first, or newest first with ``from_end``. ``due_page`` runs it from SQL
    compiled once; this is its definition.
    """
    bindings = ExerciseBinding.objects.filter(
        learner=learner, card_id=OuterRef("card_id"), study_day=today
    )
    return (
        queue_states(learner=learner, today=today)
        .order_by(*(("-due_on", "-id") if from_end else ("due_on", "id")))
        .annotate(
            tag_names=_tag_names_sql(),
            lapses=_lapses_sql(),
            binding_id=Subquery(bindings.values("id")[:1]),
            bound_exercise_id=Subquery(
                bindings.exclude(review__isnull=True, exercise__attempts_used__gt=0).values(
                    "exercise_id"
                )[:1]
            ),
        )
        .values(*DUE_PAGE_FIELDS, "tag_names", "lapses", "binding_id", "bound_exercise_id")
    )


def due_page(
    *, learner, today: dt.date, offset: int, limit: int, count: int | None = None
) -> list[dict]:
    """One page of the due queue as plain rows, card fields and tag names included.

    Given ``count`` (all that is due), a page in the back half of the queue is read
    from its end, newest due first, and turned round: the last page costs what the
    first does, and no page skips more than half the queue.

    ``leech`` is True for a card failed ``STUDY_LEECH_LAPSES`` times or more, net of
    undos. ``bound_exercise_id`` is the exercise bound today to an exercise card's review
    when it can still record that review; ``binding_id`` is today's binding, if any.
    One query, whatever the page size and the number of exercise cards on it.
    """
    if is_paused(learner=learner, today=today) or (count is not None and offset >= count):
        return []
    from_end = count is not None and offset > count // 2
    if count is not None and from_end:
        stop = min(offset + limit, count)
        offset, limit = count - stop, stop - offset
    query = _DUE_PAGE_FROM_END if from_end else _DUE_PAGE
    rows = query.dicts(learner_id=learner.pk, today=today, limit=limit, offset=offset)
    if from_end:
        rows.reverse()
    return due_page_rows(rows)


def due_page_rows(rows: list[dict]) -> list[dict]:
    """``due_page_query`` rows as ``due_page`` returns them: ``leech``, tag names as a list."""
    for row in rows:
        row["leech"] = row.pop("lapses") >= settings.STUDY_LEECH_LAPSES
        names = row["tag_names"]
        if isinstance(names, str):
            row["tag_names"] = names.split(_TAG_SEPARATOR)
        elif names is None:
            row["tag_names"] = []
    return rows


# --- The due queue's SQL, compiled once per connection ----------------------------
# Compiling these three queries took a few milliseconds a request; they are compiled
# once, from the functions above, for a stand-in learner and day (cards.db.compiled).
# The stand-in is not paused, so the SQL is queue_states' own for a learner who is
# not; due_count and due_page make queue_states' pause check themselves first.

_STAND_IN_LEARNER_ID = -7_919_311
_STAND_IN_DAY = dt.date(1, 2, 3)
_SLOTS = {"learner_id": _STAND_IN_LEARNER_ID, "today": _STAND_IN_DAY}


def _stand_in_learner():
    learner = get_user_model()(pk=_STAND_IN_LEARNER_ID)
    LearnerProfile(user=learner)  # cached on the stand-in (not paused), never saved
    return learner


_DUE_PAGE = CompiledQuery(
    lambda: due_page_query(learner=_stand_in_learner(), today=_STAND_IN_DAY),
    slots=_SLOTS,
    paged=True,
)
_DUE_PAGE_FROM_END = CompiledQuery(
    lambda: due_page_query(learner=_stand_in_learner(), today=_STAND_IN_DAY, from_end=True),
    slots=_SLOTS,
    paged=True,
)


def next_due_on(*, learner) -> dt.date | None:
    first = (
        scheduled_states(learner=learner)
        .filter(suspended=False)
        .aggregate(first=Min("due_on"))["first"]
    )
    end = pause_end(learner_profile(learner))
    if first is not None and end is not None and first < end:
        return end
    return first


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


def net_review_log(*, learner) -> QuerySet[ReviewLog]:
    """The learner's reviews oldest first, without undone ones or their undo entries."""
    return ReviewLog.objects.filter(
        learner=learner, undo_of__isnull=True, undone_by__isnull=True
    ).order_by("reviewed_at", "id")


def review_calendar(*, learner, start: dt.date, end: dt.date) -> dict[dt.date, int]:
    rows = ReviewDay.objects.filter(
        learner=learner, study_day__gte=start, study_day__lte=end, reviews__gt=0
    ).values_list("study_day", "reviews")
    return dict(rows)


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
    end = pause_end(profile)
    pause = None if end is None or profile.pause_start is None else (profile.pause_start, end)
    return ladder.streak_days(
        {day: min_due for day, _, _, min_due in days},
        today=today,
        still_due=still_due,
        pause=pause,
    )


def _state_counts(
    *, learner, today: dt.date, horizon: dt.date
) -> tuple[list[tuple[dt.date, int]], dict[int, int]]:
    """``(forecast rows, by_step rows)`` of the learner's scheduled states, from their counts.

    The forecast rows are ``(due_on, n)`` of the unsuspended states due by ``horizon``
    and not buried ``today``: ``queue_states`` up to the horizon, regardless of the
    pause. The counts table (kept by triggers) holds a row per due date and rung, so
    both reads follow the learner's days, not their cards; today's buried states are
    few, read through their partial index and taken off.
    """
    forecast: dict[dt.date, int] = defaultdict(int)
    by_step: dict[int, int] = defaultdict(int)
    for due_on, step, suspended, n in ReviewStateCount.objects.filter(learner=learner).values_list(
        "due_on", "step", "suspended", "n"
    ):
        by_step[step] += n
        if not suspended and due_on <= horizon:
            forecast[due_on] += n
    buried = (
        scheduled_states(learner=learner)
        .filter(buried_on=today, suspended=False, due_on__lte=horizon)
        .values("due_on")
        .annotate(n=Count("*"))
        .values_list("due_on", "n")
    )
    for due_on, n in buried:
        forecast[due_on] -= n
    return sorted(forecast.items()), by_step


def learner_stats(*, learner, today: dt.date) -> dict:
    horizon = today + dt.timedelta(days=FORECAST_DAYS - 1)
    forecast = {today + dt.timedelta(days=i): 0 for i in range(FORECAST_DAYS)}
    # While paused, nothing falls due before the pause ends.
    paused = is_paused(learner=learner, today=today)
    first_day = (pause_end(learner_profile(learner)) or today) if paused else today
    due_rows, step_rows = _state_counts(learner=learner, today=today, horizon=horizon)
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
        by_step[str(step)] = n

    # One read of the day rows serves the retention window and the streak.
    days = _review_days(learner=learner, today=today)
    window_start = today - dt.timedelta(days=RETENTION_DAYS - 1)
    window = [(day, n, passes) for day, n, passes, _ in days if window_start <= day <= today]
    total = sum(n for _, n, _ in window)
    passed = sum(passes for _, _, passes in window)
    retention = passed / total if total else None
    stats = {
        "today": today,
        "due_today": due_today,
        "reviewed_today": sum(n for day, n, _ in window if day == today),
        "streak_days": _streak(learner=learner, today=today, days=days),
        "retention_30d": None if retention is None else round(retention, 4),
        "by_step": by_step,
        "forecast": [{"date": day, "count": n} for day, n in forecast.items()],
        **_leech_stats(learner=learner),
        "paused": paused,
    }
    stats["predictions_30d"] = _prediction_accuracy(learner=learner, window_start=window_start)
    return stats


def _leech_stats(*, learner) -> dict:
    # The learner's leeches from the lapse counts (most learners have none: one short
    # read), then those few checked against the ladder: no pass over the log or the states.
    candidates = leech_card_ids(learner=learner)
    leeches: list[int] = []
    if candidates:
        leeches = sorted(
            scheduled_states(learner=learner)
            .filter(card_id__in=sorted(candidates))
            .values_list("card_id", flat=True)
        )
    return {"leech": bool(leeches), "leech_count": len(leeches), "leech_cards": leeches}


def _prediction_accuracy(*, learner, window_start: dt.date) -> dict:
    """Predictions made since the start of the learner's study day ``window_start``."""
    profile = learner_profile(learner)
    zone = ladder.zone_or_utc(profile.timezone)
    since = ladder.study_day_start(window_start, zone, profile.day_starts_at)
    return prediction_accuracy(owner=learner, since=since)
