"""Celery tasks of the labs: thin, idempotent wrappers around services.

They run on the ``labs`` queue (``CELERY_TASK_ROUTES``), served by a worker of its own
(`celery -A studyapp worker -Q labs`), so learner code never waits behind the study
core's jobs, nor they behind it. A task may run twice; the service makes the second
run a no-op.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_ready

from . import availability, services

# Well above the sandbox's wall time, well under the broker's visibility timeout.
SOFT_TIME_LIMIT = 120
TIME_LIMIT = 150


@shared_task(
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
            reason="Grading took too long and was stopped; submit again.",
        )
        return "failed"
    return None if submission is None else submission.status


@shared_task(ignore_result=True, soft_time_limit=30, time_limit=40)
def report_sandbox() -> str | None:
    """Check the sandbox on the labs worker and keep the answer for the web processes."""
    return availability.report()


@worker_ready.connect
def _report_on_start(sender: Any = None, **_: Any) -> None:
    # A labs worker reports as soon as it starts, not a beat interval later.
    try:
        queues = sender.app.amqp.queues.consume_from or {}
    except AttributeError:
        return
    if "labs" in queues:
        availability.report()
