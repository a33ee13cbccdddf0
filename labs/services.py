"""Writes of the labs: a submission saved and queued, then graded once.

``submission_create`` checks the request, saves the submission and enqueues its
grading after commit (``labs.tasks.grade_submission`` on the ``labs`` queue). The
grading task calls ``submission_grade``, which claims a queued submission with a
conditional UPDATE (a second run of the task finds nothing to claim), grades it
outside any transaction (``labs.grading``: the sandbox may take seconds) and stores
the result. Both tell the review side (``labs.reviews``), inside their transaction,
so a lab card's review is bound and recorded with the submission it comes from.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from django.db import DatabaseError, transaction
from django.utils import timezone

from . import grading, reviews
from .models import Submission
from .selectors import LabNotFound, lab_get

logger = logging.getLogger(__name__)

CODE_MAX_BYTES = 64 * 1024


class LabsUnavailable(Exception):
    """No sandbox can run lab code here; ``reason`` says why, in words."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class CodeInvalid(ValueError):
    """The submitted code is not what a submission takes; the message says what is."""


def code_problem(code: Any) -> str | None:
    """Why ``code`` cannot be submitted, or None: Python source, UTF-8, 1 byte to 64 KiB."""
    if not isinstance(code, str):
        return "Expected Python source as a string."
    try:
        size = len(code.encode("utf-8"))
    except UnicodeEncodeError:
        return "Expected UTF-8 text; the code holds a character UTF-8 cannot encode."
    if not code.strip():
        return "Expected Python source, got an empty string."
    if size > CODE_MAX_BYTES:
        return f"Expected at most {CODE_MAX_BYTES:,} bytes of UTF-8, got {size:,}."
    if "\x00" in code:
        return "Contains a NUL character (\\x00); remove it."
    return None


def submission_create(*, learner: Any, lab_slug: str, code: Any) -> Submission:
    """Save a submission of ``lab_slug`` and queue its grading.

    ``LabNotFound`` for an unknown lab, ``CodeInvalid`` for code it cannot take and
    ``LabsUnavailable`` when no sandbox can start; in each case nothing is saved.
    """
    lab = lab_get(lab_slug)
    problem = code_problem(code)
    if problem is not None:
        raise CodeInvalid(problem)
    reason = grading.sandbox_unavailable()
    if reason is not None:
        raise LabsUnavailable(reason)
    return _submission_save(learner=learner, lab_slug=lab.slug, code=code)


@transaction.atomic
def _submission_save(*, learner: Any, lab_slug: str, code: str) -> Submission:
    from .tasks import grade_submission

    submission = Submission.objects.create(
        learner=learner, lab=lab_slug, code=code, seed=secrets.randbits(63)
    )
    reviews.submitted(
        learner=learner, lab_slug=lab_slug, submission_id=submission.pk, at=submission.created_at
    )
    grade_submission.delay_on_commit(submission.pk)
    return submission


def _claim(submission_id: int) -> bool:
    """Move a queued submission to running; False when it is not queued (any more)."""
    return bool(
        Submission.objects.filter(pk=submission_id, status=Submission.Status.QUEUED).update(
            status=Submission.Status.RUNNING, started_at=timezone.now()
        )
    )


def submission_grade(*, submission_id: int) -> Submission | None:
    """Grade a queued submission and store the result; None when it was not queued.

    Idempotent: only a queued submission moves to running, so a second run of the task
    (a redelivery, a retry) does nothing. A lab gone from the catalogue, or a sandbox
    that cannot run, leaves the submission ``failed`` with the reason in ``diagnosis``.
    """
    if not _claim(submission_id):
        return None
    submission = Submission.objects.get(pk=submission_id)
    try:
        lab = lab_get(submission.lab)
    except LabNotFound:
        graded = grading.Graded(
            status="failed", diagnosis=f"The lab {submission.lab!r} is no longer offered."
        )
    else:
        graded = grading.grade(lab=lab, code=submission.code, seed=submission.seed)
    return _store(submission=submission, graded=graded)


@transaction.atomic
def _store(*, submission: Submission, graded: grading.Graded) -> Submission:
    submission.status = graded.status
    submission.passed = graded.passed if graded.status == Submission.Status.DONE else None
    submission.tests = graded.tests
    submission.diagnosis = graded.diagnosis
    submission.output = graded.output
    submission.duration_ms = graded.duration_ms
    submission.finished_at = timezone.now()
    stored = Submission.objects.filter(pk=submission.pk, status=Submission.Status.RUNNING).update(
        status=submission.status,
        passed=submission.passed,
        tests=submission.tests,
        diagnosis=submission.diagnosis,
        output=submission.output,
        duration_ms=submission.duration_ms,
        finished_at=submission.finished_at,
    )
    if stored:
        _tell_review_side(submission)
    return submission


def _tell_review_side(submission: Submission) -> None:
    # A fault on the review side must not lose the grade: it runs in a savepoint and is
    # logged; the submission is stored either way.
    try:
        with transaction.atomic():
            reviews.graded(
                submission_id=submission.pk,
                passed=submission.passed,
                at=submission.finished_at or timezone.now(),
            )
    except DatabaseError:
        logger.exception("The review of lab submission %s was not recorded", submission.pk)


def submission_fail(*, submission_id: int, reason: str) -> Submission | None:
    """Store a running submission as ``failed`` with ``reason`` (its grading was cut
    short); None when it is not running."""
    submission = Submission.objects.filter(
        pk=submission_id, status=Submission.Status.RUNNING
    ).first()
    if submission is None:
        return None
    return _store(submission=submission, graded=grading.Graded(status="failed", diagnosis=reason))
