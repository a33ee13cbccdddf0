"""Binding the exercises of the due queue ahead of the page that shows them.

An exercise card in a learner's queue carries a fresh exercise bound to its review on
that study day (``ExerciseBinding``; ``cards.services.exercise_reviews``). The due page
only reads those bindings: ``GET reviews/due/`` changes no row. They are made by writes:

* the beat, ahead of each study day: :func:`exercises_bind_ahead`, run with the
  placement job every 10 minutes, binds for every learner the exercise cards their queue
  holds on their current study day and on the next one, so a day begins with its
  exercises bound;
* the writes that bring exercise cards into a learner's queue during a study day
  (enrolling, "learn more", ending a pause, an undo) or use up a bound exercise (its
  first answer: a review recorded, or practice): :func:`queue_exercises_bind` for that
  learner. Anything else (a card resumed, or made active by staff) is bound by the
  beat's next run.

Both bind only what is missing, in the set-based statements of
``cards.services.exercise_reviews.due_exercises_bind``; run twice, the second run binds
nothing, and of two runs at once the first binding of a card and day wins. A card whose
exercise cannot be generated is flagged there, once, and passed over in the queue.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Exists, OuterRef

from exercises.models import Exercise

from .. import ladder, selectors
from ..due import due_filter
from ..models import Card, ExerciseBinding, LearnerProfile, ReviewState
from .exercise_reviews import DueExercise, due_exercises_bind
from .scheduling import id_ranges

logger = logging.getLogger(__name__)

DEFAULT_CHUNK_SIZE = 500
# Exercises one beat run binds at most (each takes under a millisecond to generate), so a
# run stays well within the placement task's time limit.
BIND_BUDGET = 20_000


def _unbound(*, learner_ids: Iterable[int], day: dt.date) -> dict[int, list[DueExercise]]:
    """The exercise cards in these learners' queues on ``day`` (the pause aside) that
    have no usable binding for that day, by learner: one query."""
    usable = ExerciseBinding.objects.usable().filter(
        learner_id=OuterRef("learner_id"), card_id=OuterRef("card_id"), study_day=day
    )
    rows = (
        ReviewState.objects.filter(learner_id__in=list(learner_ids), card__kind=Card.Kind.EXERCISE)
        .filter(due_filter(day))
        .exclude(Exists(usable))
        .order_by("learner_id", "due_on", "id")
        .values_list("learner_id", "card_id", "card__exercise", "card__generation_error")
    )
    missing: dict[int, list[DueExercise]] = defaultdict(list)
    for learner_id, card_id, spec, error in rows:
        missing[learner_id].append(DueExercise(card_id=card_id, spec=spec, flagged=bool(error)))
    return missing


def _bind(*, learner_ids: Iterable[int], day: dt.date, limit: int | None = None) -> int:
    """Bind what these learners' queues lack on ``day``, learner by learner, stopping once
    ``limit`` exercises are bound; returns how many were."""
    bound = 0
    User = get_user_model()
    for learner_id, items in _unbound(learner_ids=learner_ids, day=day).items():
        if limit is not None and bound >= limit:
            break
        bound += len(due_exercises_bind(learner=User(pk=learner_id), items=items, today=day))
    return bound


def _study_days(profile: Any, today: dt.date) -> list[dt.date]:
    """Study day ``today`` and the next, less those the learner's pause covers."""
    days = (today, today + dt.timedelta(days=1))
    return [d for d in days if not ladder.in_pause(d, profile.pause_start, profile.pause_days)]


def queue_exercises_bind(*, learner: Any, today: dt.date) -> int:
    """Bind the exercises the learner's queue lacks on study day ``today`` and on the next;
    returns how many were bound. What a write that changes the queue calls."""
    profile = selectors.learner_profile(learner)
    return sum(_bind(learner_ids=[learner.pk], day=day) for day in _study_days(profile, today))


def bound_exercises(*, exercise_ids: Iterable[int]) -> dict[int, Exercise]:
    """The exercises bound to a due page's reviews, by id: one query, nothing written."""
    return Exercise.objects.in_bulk(list(exercise_ids))


def exercises_bind_ahead(
    *, at: dt.datetime, chunk_size: int = DEFAULT_CHUNK_SIZE, budget: int = BIND_BUDGET
) -> int:
    """The beat's pass: every learner's queue gets the exercises it lacks on their current
    study day, then on their next one, ``chunk_size`` learners at a time; returns how many
    were bound (0 when every binding is there).

    At most about ``budget`` exercises a run: when the learners of a time zone begin a
    study day together, the next day's exercises of all of them are due to be bound, and
    the runs of the day share that work (today's queues always come first).
    """
    with_exercises = LearnerProfile.objects.filter(
        Exists(
            ReviewState.objects.filter(
                learner_id=OuterRef("user_id"), scheduled=True, card__kind=Card.Kind.EXERCISE
            )
        )
    )
    ranges = list(id_ranges(with_exercises, "user_id", chunk_size))
    bound = 0
    for ahead in (0, 1):  # today's queues, then the next study day's
        for after, up_to in ranges:
            profiles = with_exercises.filter(user_id__gt=after)
            if up_to is not None:
                profiles = profiles.filter(user_id__lte=up_to)
            by_day: dict[dt.date, list[int]] = defaultdict(list)
            for profile in profiles.only(
                "user_id", "timezone", "day_starts_at", "pause_start", "pause_days"
            ):
                zone = ladder.zone_or_utc(profile.timezone)
                day = ladder.study_day(at, zone, profile.day_starts_at) + dt.timedelta(ahead)
                if not ladder.in_pause(day, profile.pause_start, profile.pause_days):
                    by_day[day].append(profile.user_id)
            for day, learner_ids in sorted(by_day.items()):
                bound += _bind(learner_ids=learner_ids, day=day, limit=budget - bound)
                if bound >= budget:
                    logger.info("Bound %d exercises of the due queues ahead; more next run", bound)
                    return bound
    if bound:
        logger.info("Bound %d exercises of the due queues ahead", bound)
    return bound
