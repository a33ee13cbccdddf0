"""A learner's own controls on a card: suspend, resume and bury."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction

from .. import selectors
from ..models import ReviewState
from .errors import NotScheduled


def _state(*, learner: Any, card_id: int) -> ReviewState:
    state = selectors.scheduled_states(learner=learner).filter(card_id=card_id).first()
    if state is None:
        raise NotScheduled()
    return state


def card_suspend(*, learner: Any, card_id: int) -> ReviewState:
    """Take the card out of the learner's queue and forecast; its state is kept."""
    return _suspended_set(learner=learner, card_id=card_id, suspended=True)


def card_resume(*, learner: Any, card_id: int) -> ReviewState:
    """Bring a suspended card back with the state it had."""
    return _suspended_set(learner=learner, card_id=card_id, suspended=False)


@transaction.atomic
def _suspended_set(*, learner: Any, card_id: int, suspended: bool) -> ReviewState:
    state = _state(learner=learner, card_id=card_id)
    ReviewState.objects.filter(pk=state.pk).update(suspended=suspended)
    state.suspended = suspended
    return state


@transaction.atomic
def card_bury(*, learner: Any, card_id: int, today: dt.date) -> ReviewState:
    """Out of today's queue only: tomorrow the card is back, its state unchanged."""
    state = _state(learner=learner, card_id=card_id)
    ReviewState.objects.filter(pk=state.pk).update(buried_on=today)
    state.buried_on = today
    return state
