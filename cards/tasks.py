"""Celery tasks of the study core: thin, idempotent wrappers around services.

Every task here may run twice (a redelivery after a lost worker, two beats, a
manual run); the services make the second run a no-op. ``acks_late`` with
``reject_on_worker_lost`` lets a task whose worker died be redelivered instead
of lost. Time limits stay well under the broker's visibility timeout (3600 s).

The services never import this module: a service that wants a task run soon
publishes it by name (:func:`cards.services.scheduling.enqueue_schedule_new_cards`).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar, cast

from celery import group, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .metrics import beat_job
from .services import accounts, due_exercises, memory, reminders, scheduling
from .services import housekeeping as housekeeping_service

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class Task(Protocol[P, R_co]):
    """What mypy needs to know of a Celery task: called like its function, ``s`` and
    ``apply_async``."""

    name: str

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...

    def s(self, *args: P.args, **kwargs: P.kwargs) -> Any: ...

    def apply_async(self, *args: Any, **kwargs: Any) -> Any: ...


def _task(**options: Any) -> Callable[[Callable[P, R]], Task[P, R]]:
    # Celery ships no types: shared_task's decorator, typed by the function it wraps.
    return cast(Callable[[Callable[P, R]], Task[P, R]], shared_task(**options))


def _bound_task(**options: Any) -> Callable[[Callable[Concatenate[Any, P], R]], Task[P, R]]:
    # bind=True: Celery passes the task itself first; callers do not.
    return cast(
        Callable[[Callable[Concatenate[Any, P], R]], Task[P, R]],
        shared_task(bind=True, **options),
    )


@_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=5 * 60, time_limit=6 * 60)
def schedule_new_cards(deck_id: int | None = None) -> int:
    """Place unplaced active cards of enrolled learners (one deck, or all); after a pass
    over all, bind the exercises each queue lacks for its current and next study day."""
    placed = 0
    with beat_job("schedule_new_cards") as rows:
        placed = rows[0] = scheduling.schedule_new_cards(at=timezone.now(), deck_id=deck_id)
        if deck_id is None:  # and every queue's exercises, ahead of its study day
            due_exercises.exercises_bind_ahead(at=timezone.now())
    return placed


def _retry_after(seconds: int | None) -> dt.timedelta:
    return dt.timedelta(seconds=seconds) if seconds is not None else reminders.DEFAULT_RETRY_AFTER


@_bound_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=60, time_limit=90)
def send_due_reminders(self: Any, retry_after_seconds: int | None = None) -> int:
    """Fan a reminder pass out: one ``send_reminders_chunk`` task per range of learner ids.

    Beat only enqueues; any worker takes any chunk. ``retry_after_seconds`` (a beat
    kwarg staff may set) is how long a claimed but unsent reminder waits before
    another pass takes it over. Returns the number of chunks enqueued.
    """
    chunks = reminders.reminder_chunks(at=timezone.now(), chunk_size=settings.STUDY_REMINDER_CHUNK)
    if chunks:
        # The chunks follow the pass onto its queue (a schedule routed elsewhere).
        queue = (self.request.delivery_info or {}).get("routing_key")
        group(
            send_reminders_chunk.s(after, up_to, retry_after_seconds) for after, up_to in chunks
        ).apply_async(**({"queue": queue} if queue else {}))
    return len(chunks)


@_task(
    acks_late=True,
    reject_on_worker_lost=True,
    # Named beside the claims' lease, which is measured against them.
    soft_time_limit=int(reminders.CHUNK_SOFT_TIME_LIMIT.total_seconds()),
    time_limit=int(reminders.CHUNK_TIME_LIMIT.total_seconds()),
)
def send_reminders_chunk(
    after: int, up_to: int | None, retry_after_seconds: int | None = None
) -> int:
    """Send the reminders due now to learners with ``after < id <= up_to``.

    Past the soft time limit the chunk stops between two messages: what was sent is
    stamped, the claims left unsent are taken over after ``retry_after`` by a later
    pass. A chunk redelivered after its worker died finds its claims taken and
    sends nothing twice.
    """
    retry_after = _retry_after(retry_after_seconds)
    sent = 0
    with beat_job("send_reminders_chunk") as rows:
        try:
            sent = rows[0] = reminders.send_reminders_chunk(
                at=timezone.now(), after=after, up_to=up_to, retry_after=retry_after
            )
        except SoftTimeLimitExceeded:
            logger.warning(
                "Reminder chunk (%s, %s] stopped at its time limit; unsent claims are "
                "retried after %s",
                after,
                up_to,
                retry_after,
            )
        except reminders.MailUnavailable as exc:
            sent = rows[0] = exc.sent
            logger.error(
                "Reminder chunk (%s, %s] stopped: %s; unsent claims are retried after %s",
                after,
                up_to,
                exc,
                retry_after,
            )
    return sent


@_bound_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=60, time_limit=90)
def refresh_memory_parameters(self: Any, chunk_size: int | None = None) -> int:
    """Fan the weekly FSRS fit out: one ``refresh_memory_chunk`` task per range of learners.

    Returns the number of chunks enqueued; the chunks follow this task onto its queue.
    """
    chunks = memory.memory_refresh_chunks(chunk_size=chunk_size or memory.DEFAULT_CHUNK)
    if chunks:
        queue = (self.request.delivery_info or {}).get("routing_key")
        group(refresh_memory_chunk.s(after, up_to) for after, up_to in chunks).apply_async(
            **({"queue": queue} if queue else {})
        )
    return len(chunks)


@_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=10 * 60, time_limit=11 * 60)
def refresh_memory_chunk(after: int, up_to: int | None) -> int:
    """Fit the learners with ``after < id <= up_to``; run twice, the second fits none."""
    fitted = 0
    with beat_job("refresh_memory_chunk") as rows:
        fitted = rows[0] = memory.memory_refresh_chunk(after=after, up_to=up_to, at=timezone.now())
    return fitted


@_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=5 * 60, time_limit=6 * 60)
def housekeeping() -> dict[str, int]:
    return housekeeping_service.housekeeping(at=timezone.now())


# --- Mail a request asks for, sent after the answer ---------------------------------------


@_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=60, time_limit=90)
def send_password_reset_mail(email: str) -> int:
    """Mail a reset link to every active account with ``email``; the number sent.

    The request only enqueues this, whether or not the address has an account, so its
    time says nothing about which addresses are known. Run twice (a redelivery), it
    mails a second link; either link works once.
    """
    return accounts.password_reset_mail_send(email=email)


def enqueue_password_reset_mail(*, email: str) -> None:
    """Ask a worker to mail the reset link once the current transaction commits.

    Never raises: with the broker down the request still answers, and the failure is
    logged (without the address) so the learner's retry is the way back.
    """
    transaction.on_commit(lambda: _publish_password_reset_mail(email))


def _publish_password_reset_mail(email: str) -> None:
    try:
        send_password_reset_mail.apply_async(
            kwargs={"email": email}, retry=True, retry_policy=scheduling.PUBLISH_ONCE
        )
    except Exception as exc:
        logger.warning("Could not enqueue a password reset mail (%s: %s)", type(exc).__name__, exc)
