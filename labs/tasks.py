"""Celery tasks of the labs: thin, idempotent wrappers around services.

They run on the ``labs`` queue (``CELERY_TASK_ROUTES``), served by a worker of its own
(`celery -A studyapp worker -Q labs`), so learner code never waits behind the study
core's jobs, nor they behind it. A task may run twice; the service makes the second
run a no-op.

A grading is sent once, without the publish retries (``GradingTask``): a broker that is
down or paused fails the send within its socket timeout instead of holding the request
for seconds, and ``labs.publishing.publish_grading`` logs it; the beat job ``sweep_submissions`` sends
again whatever was not sent, or was lost with a killed worker.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.contrib.django.task import DjangoTask
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_ready, worker_shutdown
from django.utils import timezone

from . import availability, housekeeping, services
from .publishing import GRADING_EXPIRES

# Well above the sandbox's wall time, well under the broker's visibility timeout.
SOFT_TIME_LIMIT = 120
TIME_LIMIT = 150


class GradingTask(DjangoTask):
    """Sent once (no publish retry) and expiring: the sweep, not the request, retries."""

    def apply_async(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        options.setdefault("retry", False)
        options.setdefault("expires", GRADING_EXPIRES)
        return super().apply_async(args, kwargs, **options)


@shared_task(
    base=GradingTask,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=SOFT_TIME_LIMIT,
    time_limit=TIME_LIMIT,
)
def grade_submission(submission_id: int) -> Any:
    """Grade one lab submission (``labs.services.submission_grade``)."""
    try:
        submission = services.submission_grade(submission_id=submission_id)
    except SoftTimeLimitExceeded:
        services.submission_fail(
            submission_id=submission_id,
            reason="Grading took too long and was stopped; it does not count. Submit again.",
        )
        return "failed"
    return None if submission is None else submission.status


@shared_task(
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    soft_time_limit=50,
    time_limit=60,
)
def sweep_submissions() -> dict[str, int]:
    """Send again the gradings queued too long or lost with their worker
    (``labs.services.submissions_sweep``)."""
    return services.submissions_sweep(at=timezone.now())


@shared_task(
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    soft_time_limit=5 * 60,
    time_limit=6 * 60,
)
def prune_submissions(keep: int = housekeeping.KEEP_PER_LAB) -> int:
    """Delete the submissions beyond each learner's newest of a lab, except those a review
    refers to (``labs.housekeeping.prune_submissions``)."""
    return housekeeping.prune_submissions(keep=keep)


@shared_task(ignore_result=True, soft_time_limit=30, time_limit=40)
def report_sandbox() -> str | None:
    """Check the sandbox on the labs worker and keep the answer for the web processes
    (the worker's own heartbeat does so every few seconds; this beat job adds to it)."""
    return availability.report()


@worker_ready.connect
def _heartbeat_on_start(sender: Any = None, **_: Any) -> None:
    # A labs worker reports at once, then on a heartbeat of its own (labs.availability),
    # whether beat runs or not.
    try:
        queues = sender.app.amqp.queues.consume_from or {}
    except AttributeError:
        return
    if "labs" in queues:
        availability.start_heartbeat(worker=str(getattr(sender, "hostname", "") or ""))


@worker_shutdown.connect
def _heartbeat_on_stop(**_: Any) -> None:
    availability.stop_heartbeat()
