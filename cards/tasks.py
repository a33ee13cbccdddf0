"""Celery tasks of the study core: thin, idempotent wrappers around services.

Every task here may run twice (a redelivery after a lost worker, two beats, a
manual run); the services make the second run a no-op. ``acks_late`` with
``reject_on_worker_lost`` lets a task whose worker died be redelivered instead
of lost. Time limits stay well under the broker's visibility timeout (3600 s).
"""

from __future__ import annotations

import datetime as dt
import logging

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from .services import housekeeping as housekeeping_service
from .services import reminders, scheduling

logger = logging.getLogger(__name__)

# Publishing from a request must fail fast when the broker is away: no retries.
_PUBLISH_ONCE = {"max_retries": 0, "interval_start": 0}


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=5 * 60, time_limit=6 * 60)
def schedule_new_cards(deck_id: int | None = None) -> int:
    """Place unplaced active cards of enrolled learners (one deck, or all)."""
    return scheduling.schedule_new_cards(at=timezone.now(), deck_id=deck_id)


@shared_task(
    acks_late=True, reject_on_worker_lost=True, soft_time_limit=14 * 60, time_limit=15 * 60
)
def send_due_reminders(retry_after_seconds: int | None = None) -> int:
    """One pass over learners due a reminder now.

    ``retry_after_seconds`` (a beat kwarg staff may set) is how long a claimed but
    unsent reminder waits before another pass takes it over.
    """
    retry_after = (
        dt.timedelta(seconds=retry_after_seconds)
        if retry_after_seconds is not None
        else reminders.DEFAULT_RETRY_AFTER
    )
    return reminders.send_due_reminders(at=timezone.now(), retry_after=retry_after)


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=5 * 60, time_limit=6 * 60)
def housekeeping() -> dict[str, int]:
    return housekeeping_service.housekeeping(at=timezone.now())


def _publish_schedule_new_cards(deck_id: int) -> None:
    try:
        schedule_new_cards.apply_async(
            kwargs={"deck_id": deck_id}, retry=True, retry_policy=_PUBLISH_ONCE
        )
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
