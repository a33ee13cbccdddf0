"""What is due: the one definition of the due queue, and the reads derived from it.

A learner's review state is in the queue on study day ``today`` when

* it is scheduled (active card, enrolled deck: ``ReviewState.scheduled``),
* it is due by the day (``due_on <= today``),
* it is not suspended,
* it is not buried today (a card buried yesterday is back),

and nothing is while the learner's pause covers ``today`` (:func:`cards.ladder.in_pause`).
:func:`due_filter` says the first four, :func:`is_paused` the last; :func:`queue_states`
is the two together. Everything else that says what is due derives from them:

* the review page and ``reviews/due/`` page through :func:`due_page`, compiled once from
  :func:`due_page_query` (``cards.db.compiled``);
* :func:`due_count` and the forecast (:func:`counted_states`) sum ``ReviewStateCount``,
  the counts of scheduled states per due date, rung and suspension that the database
  keeps, filtered by the same terms (``_due_by``), and take off today's buried states,
  read with those terms and ``_buried_on``;
* stats/ and the home page read the due count with the forecast, from one read of the
  counts, through :func:`due_outlook`;
* the reminder pass counts with :func:`cards.db.queue.due_count_sql`.

``tests/cards/test_due_compiled.py`` and ``tests/cards/test_due_sql.py`` hold each of
those equal to :func:`queue_states`, on SQLite and on PostgreSQL, and
``tests/cards/test_rule_forms.py`` does over random histories (learners in several time
zones and day starts, paused, suspended, buried, unenrolled).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import (
    BooleanField,
    Count,
    ExpressionWrapper,
    IntegerField,
    Min,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Sum,
)
from django.db.models.functions import Coalesce

from . import ladder
from .db.compiled import CompiledQuery
from .db.queue import tag_names_column, tag_names_list
from .lapses import is_leech, lapses_column
from .models import ExerciseBinding, LearnerProfile, ReviewState, ReviewStateCount, Tag
from .selectors import learner_profile, scheduled_states


def _due_by(today: dt.date) -> Q:
    """Due on or before ``today`` and not suspended: terms of a state and of a state count."""
    return Q(due_on__lte=today, suspended=False)


def _buried_on(today: dt.date) -> Q:
    return Q(buried_on=today)


def due_filter(today: dt.date) -> Q:
    """A review state in the queue on ``today``, the pause aside: scheduled, due, not
    suspended, not buried today."""
    return Q(scheduled=True) & _due_by(today) & ~_buried_on(today)


def is_paused(*, learner, today: dt.date) -> bool:
    """Whether the learner's pause covers study day ``today``: nothing is due then."""
    profile = learner_profile(learner)
    return ladder.in_pause(today, profile.pause_start, profile.pause_days)


def queue_states(*, learner, today: dt.date) -> QuerySet[ReviewState]:
    """The due queue's rows: :func:`due_filter`, and none while the learner is paused."""
    if is_paused(learner=learner, today=today):
        return ReviewState.objects.none()
    return scheduled_states(learner=learner).filter(due_filter(today))


def due_reviews(*, learner, today: dt.date) -> QuerySet[ReviewState]:
    """Due states, oldest due first, with the card, its deck and its tags loaded."""
    return (
        queue_states(learner=learner, today=today)
        .select_related("card", "card__deck")
        .prefetch_related(Prefetch("card__tags", queryset=Tag.objects.only("name")))
        .order_by("due_on", "id")
    )


def next_due_on(*, learner) -> dt.date | None:
    """The first day a card of the learner falls due, counting the pause (none due in it)."""
    first = (
        scheduled_states(learner=learner)
        .filter(suspended=False)
        .aggregate(first=Min("due_on"))["first"]
    )
    profile = learner_profile(learner)
    end = ladder.pause_end(profile.pause_start, profile.pause_days)
    if first is not None and end is not None and first < end:
        return end
    return first


# --- The due count and the forecast, from the state counts -----------------------------


def _buried_due(*, learner, today: dt.date, horizon: dt.date) -> QuerySet[ReviewState]:
    """States due by ``horizon`` (scheduled, not suspended) but buried ``today``: few, read
    through their partial index, and taken off the counts."""
    return scheduled_states(learner=learner).filter(_due_by(horizon) & _buried_on(today))


def due_count_query(*, learner, today: dt.date) -> QuerySet:
    """``queue_states(...).count()`` of a learner who is not paused, as one row of one column.

    The state counts due by ``today`` less today's buried states, read on the learner's
    user row. The counts table has a row per due date and rung, so the cost follows the
    learner's days, not their cards.
    """
    counted = (
        ReviewStateCount.objects.filter(Q(learner=OuterRef("pk")) & _due_by(today))
        .order_by()
        .values("learner_id")
        .annotate(n=Sum("n"))
        .values("n")
    )
    buried = (
        _buried_due(learner=OuterRef("pk"), today=today, horizon=today)
        .order_by()
        .values("learner_id")
        .annotate(n=Count("*"))
        .values("n")
    )
    return (
        get_user_model()
        .objects.filter(pk=learner.pk)
        .annotate(
            due=Coalesce(Subquery(counted), 0, output_field=IntegerField())
            - Coalesce(Subquery(buried), 0, output_field=IntegerField())
        )
        .values("due")
    )


def due_count(*, learner, today: dt.date) -> int:
    """How many cards are due: ``queue_states(...).count()``, read from the state counts."""
    if is_paused(learner=learner, today=today):
        return 0
    rows = _DUE_COUNT.rows(learner_id=learner.pk, today=today)
    return int(rows[0][0]) if rows else 0  # no row: no such user


def counted_states(
    *, learner, today: dt.date, horizon: dt.date
) -> tuple[list[tuple[dt.date, int]], dict[int, int]]:
    """``(forecast rows, by_step rows)`` of the learner's scheduled states, from their counts.

    The forecast rows are ``(due_on, n)`` of ``queue_states`` up to ``horizon`` rather
    than ``today`` (states due by ``horizon``, not suspended, not buried ``today``),
    regardless of the pause; ``by_step`` counts every scheduled state per rung.
    """
    forecast: dict[dt.date, int] = defaultdict(int)
    by_step: dict[int, int] = defaultdict(int)
    rows = (
        ReviewStateCount.objects.filter(learner=learner)
        .annotate(in_forecast=ExpressionWrapper(_due_by(horizon), output_field=BooleanField()))
        .values_list("due_on", "step", "in_forecast", "n")
    )
    for due_on, step, in_forecast, n in rows:
        by_step[step] += n
        if in_forecast:
            forecast[due_on] += n
    buried = (
        _buried_due(learner=learner, today=today, horizon=horizon)
        .values("due_on")
        .annotate(n=Count("*"))
        .values_list("due_on", "n")
    )
    for due_on, n in buried:
        forecast[due_on] -= n
    return sorted(forecast.items()), by_step


@dataclass(frozen=True)
class DueOutlook:
    """What is due on ``today`` and what falls due over the days after it (:func:`due_outlook`)."""

    today: dt.date
    paused: bool  # the learner's pause covers today
    resumes_on: dt.date  # the first day anything can be due: today, or the day the pause ends
    due_today: int  # queue_states(...).count()
    forecast: dict[dt.date, int]  # from today on: the states that join the queue each day
    by_step: dict[int, int]  # every scheduled state, per stored step


def due_outlook(*, learner, today: dt.date, days: int) -> DueOutlook:
    """The due count and a forecast of ``days`` days from ``today``, in one read of the counts.

    The forecast puts each state of :func:`counted_states` (due by the last day, not
    suspended, not buried today) on the first day it would be in the queue were nothing
    reviewed meanwhile: its due date, or ``resumes_on`` when that is later (an overdue
    card on today, one due in the pause on the day it ends). What it puts on today is
    the due count, ``queue_states(...).count()``: nothing while paused.
    """
    profile = learner_profile(learner)
    paused = is_paused(learner=learner, today=today)
    end = ladder.pause_end(profile.pause_start, profile.pause_days)
    resumes_on = (end or today) if paused else today
    forecast = {today + dt.timedelta(days=i): 0 for i in range(days)}
    rows, by_step = counted_states(
        learner=learner, today=today, horizon=today + dt.timedelta(days=days - 1)
    )
    for due_on, n in rows:
        day = max(due_on, resumes_on)
        if day in forecast:
            forecast[day] += n
    return DueOutlook(
        today=today,
        paused=paused,
        resumes_on=resumes_on,
        due_today=forecast[today],
        forecast=forecast,
        by_step=dict(by_step),
    )


# --- The due page ------------------------------------------------------------------------

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
    "card__lab",
    "card__points",
    "card__lesson_section",
    "card__position",
    "card__is_active",
    "card__created_at",
    "card__updated_at",
    "card__generation_error",
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
            tag_names=tag_names_column(),
            lapses=lapses_column(),
            binding_id=Subquery(bindings.values("id")[:1]),
            bound_exercise_id=Subquery(bindings.usable().values("exercise_id")[:1]),
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

    ``leech`` is :func:`cards.lapses.is_leech` of the card's lapses. ``bound_exercise_id``
    is the exercise bound today to an exercise card's review when it can still record
    that review; ``binding_id`` is today's binding, if any. One query, whatever the page
    size and the number of exercise cards on it.
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
        row["leech"] = is_leech(row.pop("lapses"))
        row["tag_names"] = tag_names_list(row["tag_names"])
    return rows


# --- The due queue's SQL, compiled once per connection ----------------------------------
# Compiling these queries took a few milliseconds a request; they are compiled once,
# from the functions above, for a stand-in learner and day (cards.db.compiled). The
# stand-in is not paused, so the SQL is the definition's own for a learner who is not;
# due_count and due_page make queue_states' pause check themselves first.

_STAND_IN_LEARNER_ID = -7_919_311
_STAND_IN_DAY = dt.date(1, 2, 3)
_SLOTS = {"learner_id": _STAND_IN_LEARNER_ID, "today": _STAND_IN_DAY}


def _unpaused(learner_id: int):
    """A learner of that id with a default profile (not paused), cached, never saved."""
    learner = get_user_model()(pk=learner_id)
    LearnerProfile(user=learner)
    return learner


def _stand_in_learner():
    return _unpaused(_STAND_IN_LEARNER_ID)


# Each is also given its plain queryset: what is served, slower, should compiling fail.
_DUE_COUNT = CompiledQuery(
    lambda: due_count_query(learner=_stand_in_learner(), today=_STAND_IN_DAY),
    slots=_SLOTS,
    plain=lambda learner_id, today: due_count_query(learner=_unpaused(learner_id), today=today),
)
_DUE_PAGE = CompiledQuery(
    lambda: due_page_query(learner=_stand_in_learner(), today=_STAND_IN_DAY),
    slots=_SLOTS,
    paged=True,
    plain=lambda learner_id, today: due_page_query(learner=_unpaused(learner_id), today=today),
)
_DUE_PAGE_FROM_END = CompiledQuery(
    lambda: due_page_query(learner=_stand_in_learner(), today=_STAND_IN_DAY, from_end=True),
    slots=_SLOTS,
    paged=True,
    plain=lambda learner_id, today: due_page_query(
        learner=_unpaused(learner_id), today=today, from_end=True
    ),
)
