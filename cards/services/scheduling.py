"""Placing new cards on learners' ladders, set-based, for the beat job: the pace.

A card *waits* when its learner is enrolled in its deck, it is active, and the learner
has no review state for it: cards not yet reached by the pace, cards added after
enrolment, and cards re-activated that were never placed. On each study day on which
a learner reviewed, the job places up to their ``new_cards_per_day`` of them, in line
order (:mod:`cards.services.pace` states the rule). Existing states are never touched,
so a re-activated card that was once scheduled keeps its progress.

Each learner's first due date depends on their own study day (time zone and day
start). Learners share a handful of distinct ``(timezone, day_starts_at)`` pairs,
so the due date is computed once per pair in Python with :mod:`cards.ladder` and
handed to SQL as a small derived table; one ``INSERT ... SELECT`` per chunk of
learner ids then places every missing state of that chunk.

A write that adds or re-activates cards asks for a placement right away with
:func:`enqueue_schedule_new_cards`: it publishes the ``cards.tasks.schedule_new_cards``
task by name once the transaction commits, so the services never import the tasks
module (which imports the services).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Iterator
from typing import Any
from zoneinfo import ZoneInfo

from celery import current_app
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Exists, F, Max, OuterRef, QuerySet, Window
from django.db.models.functions import Lead, RowNumber
from django.utils import timezone

from .. import ladder
from ..db import placement
from ..db.placement import GROUPS_PER_STATEMENT, groups_table
from ..models import Card, Enrollment, LearnerProfile, ReviewState

logger = logging.getLogger(__name__)

# Enrolments per statement: with decks of ~100 cards, ~50,000 rows per transaction.
DEFAULT_CHUNK_SIZE = 500
# Rows aimed at per statement when decks are small: fewer, larger statements.
ROWS_PER_STATEMENT = 50_000
# The placement task, published by name: see enqueue_schedule_new_cards.
SCHEDULE_NEW_CARDS_TASK = "cards.tasks.schedule_new_cards"
# Publishing from a request must fail fast when the broker is away: no retries.
PUBLISH_ONCE = {"max_retries": 0, "interval_start": 0}


def zone_or_utc(name: str) -> ZoneInfo:
    """The learner's zone (:func:`cards.ladder.zone_or_utc`), logging an unknown name."""
    zone = ladder.zone_or_utc(name)
    if zone.key != name:
        logger.warning("Unknown time zone %r in a learner profile; using UTC", name)
    return zone


def id_ranges(
    queryset: QuerySet[Any], field: str, chunk_size: int
) -> Iterator[tuple[int, int | None]]:
    """Half-open ranges ``(after, up_to]`` of ``field`` values, each covering ~``chunk_size`` rows.

    One query, whatever the number of ranges: the rows are numbered in ``field`` order
    and every ``chunk_size``-th value is a bound (a walk of one query per range would
    sort the remaining rows again for each range when the planner cannot follow an
    index through the queryset's joins). ``up_to`` is None for the last range. A bound
    with no larger value after it is dropped, so a last range of exactly ``chunk_size``
    rows ends the walk instead of leaving an empty range behind it; a value repeated
    across a bound (``field`` need not be unique) stays within one range.
    """
    order = F(field).asc()
    numbered = (
        queryset.order_by()
        .alias(_row=Window(RowNumber(), order_by=order))
        .annotate(_next=Window(Lead(field), order_by=order))
        .alias(_slot=F("_row") % chunk_size)
        .filter(_slot=0)
        .order_by(field)
        .values_list(field, "_next")
    )
    after = 0
    for bound, following in numbered:
        if bound > after and following is not None and following > bound:
            yield after, bound
            after = bound
    yield after, None


def placement_days_by_group(
    *, at: dt.datetime, enrollments: QuerySet[Enrollment]
) -> list[list[tuple[str, int, dt.date, dt.date]]]:
    """``(timezone, day_starts_at, day, due_on)`` per pair found among enrolled learners.

    Two lists: yesterday's rows, then today's. ``day`` is the group's study day and
    ``due_on`` the first due date of a card placed on it. Yesterday's pass places what
    a day's last reviews earned after the job's last run of that day (the job runs every
    few minutes, the day may end in between): due today, as it would have been.
    """
    pairs = (
        LearnerProfile.objects.filter(user_id__in=enrollments.values("learner_id"))
        .values_list("timezone", "day_starts_at")
        .distinct()
    )
    passes: list[list[tuple[str, int, dt.date, dt.date]]] = [[], []]
    for tz_name, day_starts_at in pairs:
        today = ladder.study_day(at, zone_or_utc(tz_name), day_starts_at)
        for i, day in enumerate((today - dt.timedelta(days=1), today)):
            first = ladder.first_schedule(day, settings.STUDY_LADDER_DAYS)
            passes[i].append((tz_name, day_starts_at, day, first.due_on))
    return passes


def _chunk_for(enrollments: QuerySet[Enrollment]) -> int:
    """Enrolments per statement so that one statement writes at most ~ROWS_PER_STATEMENT rows."""
    largest = (
        Card.objects.filter(is_active=True, deck_id__in=enrollments.values("deck_id"))
        .values("deck_id")
        .annotate(n=Count("id"))
        .aggregate(m=Max("n"))["m"]
    )
    return max(DEFAULT_CHUNK_SIZE, ROWS_PER_STATEMENT // max(largest or 1, 1))


def schedule_new_cards(
    *, at: dt.datetime, deck_id: int | None = None, chunk_size: int | None = None
) -> int:
    """The pace's daily placement (:mod:`cards.services.pace`); returns the cards placed.

    For every enrolled learner who reviewed on their study day at ``at``, the day's
    allowance (``new_cards_per_day`` less what the day already placed) of their waiting
    cards starts at rung 0, due the next day; the same for yesterday's allowance first,
    due today (see :func:`placement_days_by_group`). ``deck_id`` limits the pass to
    one deck's cards (a deck that just gained cards). Idempotent: a second run finds
    each allowance spent; a run racing an enrolment places nothing twice (``ON CONFLICT
    DO NOTHING``). Each statement commits on its own so no transaction spans the table.
    """
    enrollments = Enrollment.objects.all()
    if deck_id is not None:
        enrollments = enrollments.filter(deck_id=deck_id)
    passes = placement_days_by_group(at=at, enrollments=enrollments)
    if not passes[0]:
        return 0

    if chunk_size is None:
        chunk_size = _chunk_for(enrollments)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    placed = 0
    ranges = list(id_ranges(enrollments, "learner_id", chunk_size))
    for groups in passes:
        for start in range(0, len(groups), GROUPS_PER_STATEMENT):
            table, table_params = groups_table(
                groups[start : start + GROUPS_PER_STATEMENT], ("tz", "day_start", "day", "due_on")
            )
            for after, up_to in ranges:
                params = [now, now, *table_params, True, after, after]
                params += [up_to, up_to] if up_to is not None else []
                params += [deck_id] if deck_id is not None else []
                sql = placement.placement_sql(
                    table, bounded=up_to is not None, one_deck=deck_id is not None
                )
                placed += placement.place(sql, params)
    if placed:
        logger.info("Placed %d new review states (deck %s)", placed, deck_id or "all")
    return placed


def sync_scheduled(
    *,
    learner_id: int | None = None,
    deck_ids: Iterable[int] | None = None,
    card_ids: Iterable[int] | None = None,
) -> int:
    """Set ``ReviewState.scheduled`` (active card, enrolled deck) for the states given.

    Called by every service that activates or deactivates cards, moves them between
    decks, or enrols and unenrols learners, with the narrowest scope it knows. Two
    conditional ``UPDATE``s write only the rows whose flag is wrong; each computes
    the flag from the current cards and enrolments, so a concurrent change is never
    overwritten with a stale value. Returns the rows changed.
    """
    states = ReviewState.objects.all()
    if learner_id is not None:
        states = states.filter(learner_id=learner_id)
    if deck_ids is not None:
        states = states.filter(card__deck_id__in=list(deck_ids))
    if card_ids is not None:
        states = states.filter(card_id__in=list(card_ids))
    on_ladder = Exists(
        Enrollment.objects.filter(
            learner_id=OuterRef("learner_id"),
            deck__cards=OuterRef("card_id"),
            deck__cards__is_active=True,
        )
    )
    changed = states.filter(scheduled=True).exclude(on_ladder).update(scheduled=False)
    changed += states.filter(scheduled=False).filter(on_ladder).update(scheduled=True)
    return changed


def _publish_schedule_new_cards(deck_id: int) -> None:
    options: dict[str, Any] = {
        "kwargs": {"deck_id": deck_id},
        "retry": True,
        "retry_policy": PUBLISH_ONCE,
    }
    try:
        task = current_app.tasks.get(SCHEDULE_NEW_CARDS_TASK)
        if task is not None:
            # Registered in this process: through the task, so task_always_eager holds.
            task.apply_async(**options)
        else:
            current_app.send_task(SCHEDULE_NEW_CARDS_TASK, **options)
    except Exception as exc:
        # The beat job places the cards on its next run; the request must not fail.
        logger.warning(
            "Could not enqueue schedule_new_cards for deck %s (%s: %s); "
            "the beat job will place its cards",
            deck_id,
            type(exc).__name__,
            exc,
        )


def enqueue_schedule_new_cards(deck_id: int) -> None:
    """Ask a worker to place a deck's new cards once the current transaction commits.

    Never raises: with the broker down the warning is logged and the periodic
    ``schedule_new_cards`` catches up.
    """
    transaction.on_commit(lambda: _publish_schedule_new_cards(deck_id))
