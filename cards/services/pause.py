"""Pausing study (a vacation): nothing falls due, due dates move on by the pause."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction
from django.db.models import F, Q

from .. import ladder
from ..models import LearnerProfile, ReviewState
from .due_exercises import queue_exercises_bind
from .profiles import profile_ensure

MAX_PAUSE_DAYS = 90


class PauseRefused(Exception):
    pass


def _shift(*, learner: Any, days: int) -> int:
    # Every one of the learner's states, enrolled or not, so leaving and rejoining
    # a deck during a pause finds its cards moved like the rest.
    return ReviewState.objects.filter(learner=learner).update(
        due_on=F("due_on") + dt.timedelta(days=days)
    )


@transaction.atomic
def pause_begin(*, learner: Any, start: dt.date, days: int, today: dt.date) -> LearnerProfile:
    """Pause from ``start`` for ``days`` study days and move every due date on by ``days``.

    Refused while another pause is planned or running. The profile is claimed by
    a conditional UPDATE, so two concurrent requests shift the dates once.
    """
    if start < today:
        raise ValueError("start")
    if not 1 <= days <= MAX_PAUSE_DAYS:
        raise ValueError("days")
    profile = profile_ensure(learner)
    # Free to pause when there is no pause, or the last one has ended by today.
    free = Q(pause_start__isnull=True) | Q(pause_days=0)
    end = ladder.pause_end(profile.pause_start, profile.pause_days)
    if end is not None and end <= today:
        free |= Q(pause_start=profile.pause_start, pause_days=profile.pause_days)
    claimed = LearnerProfile.objects.filter(free, pk=profile.pk).update(
        pause_start=start, pause_days=days
    )
    if not claimed:
        raise PauseRefused("You already have a pause; end it before starting another.")
    _shift(learner=learner, days=days)
    profile.pause_start, profile.pause_days = start, days
    return profile


@transaction.atomic
def pause_finish(*, learner: Any, today: dt.date) -> tuple[dt.date, int]:
    """End a planned or running pause early; due dates move back by the days not used.

    Returns ``(start, days_used)``. A pause that has already run its course cannot
    be ended.
    """
    profile = profile_ensure(learner)
    end = ladder.pause_end(profile.pause_start, profile.pause_days)
    start, days = profile.pause_start, profile.pause_days
    if end is None or start is None or end <= today:
        raise PauseRefused("You have no pause to end.")
    used = min(max((today - start).days, 0), days)
    claimed = LearnerProfile.objects.filter(
        pk=profile.pk, pause_start=start, pause_days=days
    ).update(pause_start=None if used == 0 else start, pause_days=used)
    if not claimed:
        raise PauseRefused("Your pause changed meanwhile; reload and try again.")
    _shift(learner=learner, days=used - days)
    profile.pause_start, profile.pause_days = (None if used == 0 else start), used
    queue_exercises_bind(learner=learner, today=today)
    return start, used
