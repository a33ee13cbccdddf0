"""Sending a grading to the labs queue, by the task's name.

The services publish through here and never import ``labs.tasks`` (which imports the
services): the task is looked up by name in the Celery app, as the study core does
for placement (``cards.services.scheduling.enqueue_schedule_new_cards``).
"""

from __future__ import annotations

import logging

from celery import current_app

logger = logging.getLogger(__name__)

GRADE_SUBMISSION_TASK = "labs.tasks.grade_submission"
# A grading message not taken within this many seconds is dropped by the worker: by then
# the sweep has sent the submission again (it sends what waits over a minute).
GRADING_EXPIRES = 10 * 60


def publish_grading(submission_id: int) -> bool:
    """Send a submission's grading to the labs queue, once; False (logged) when the
    broker did not take it. Never raises: the sweep sends it again."""
    try:
        task = current_app.tasks.get(GRADE_SUBMISSION_TASK)
        if task is not None:
            # Registered in this process: through the task (its send options, eager mode).
            task.delay(submission_id)
        else:
            current_app.send_task(
                GRADE_SUBMISSION_TASK,
                args=[submission_id],
                retry=False,
                expires=GRADING_EXPIRES,
            )
    except Exception as exc:
        logger.warning(
            "Could not enqueue the grading of lab submission %s (%s: %s); "
            "the sweep will send it again",
            submission_id,
            type(exc).__name__,
            exc,
        )
        return False
    return True
