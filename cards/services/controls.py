"""A learner's own controls on a card: suspend, resume and bury."""

from __future__ import annotations

import datetime as dt

from django.db import transaction

from .. import selectors
from ..models import ReviewState
from .errors import NotScheduled


def _state(*, learner, card_id: int) -> ReviewState:
    state = selectors.scheduled_states(learner=learner).filter(card_id=card_id).first()
    if state is None:
        raise NotScheduled()
    return state


@transaction.atomic
def card_suspend(*, learner, card_id: int) -> ReviewState:
    """Take the card out of the learner's queue and forecast; its state is kept."""
    state = _state(learner=learner, card_id=card_id)
    ReviewState.objects.filter(pk=state.pk).update(suspended=True)
    state.suspended = True
    return state


@transaction.atomic
def card_resume(*, learner, card_id: int) -> ReviewState:
    state = _state(learner=learner, card_id=card_id)
    ReviewState.objects.filter(pk=state.pk).update(suspended=False)
    state.suspended = False
    return state


@transaction.atomic
def card_bury(*, learner, card_id: int, today: dt.date) -> ReviewState:
    """Out of today's queue only: tomorrow the card is back, its state unchanged."""
    state = _state(learner=learner, card_id=card_id)
    ReviewState.objects.filter(pk=state.pk).update(buried_on=today)
    state.buried_on = today
    return state
