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

from . import services

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
