"""Writes of the labs: a submission saved and queued, then graded once.

``submission_create`` checks the request, saves the submission and sends its grading
to the broker after commit (``labs.publishing.publish_grading``: one bounded try; a broker
that is down or paused is logged and the submission stays queued for the sweep). A
learner has one submission queued or running at most: a second is refused
(``SubmissionPending``, the API's 409), and the database keeps the rule against racing
requests (``submission_one_pending_per_learner``).

The grading task calls ``submission_grade``, which claims the submission under a lease
with a conditional UPDATE: a queued one, or a running one whose lease ran out (its
worker was killed), once. It grades outside any transaction (``labs.grading``: the
sandbox may take seconds) and stores the result only while its claim still holds (the
``attempts`` it claimed), so a grading taken over is stored once. A grading whose lease
runs out a second time fails as the service's fault. ``submissions_sweep`` (a beat job)
sends again what is queued for over a minute and what is running past its lease.
Both tell the review side (``labs.reviews``), inside their transaction, so a lab card's
review is bound and recorded with the submission it comes from, once.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import secrets
from functools import partial
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from . import grading, reviews
from .models import Submission
from .publishing import publish_grading
from .selectors import LabNotFound, lab_get, pending_submission

logger = logging.getLogger(__name__)

CODE_MAX_BYTES = 64 * 1024
# A grading is claimed at most this often: its first run and one takeover.
MAX_ATTEMPTS = 2
# A submission queued this long (or running past its lease) is sent to the broker again.
REPUBLISH_AFTER = dt.timedelta(seconds=60)
# What one sweep sends at most; the next sweep takes the rest.
SWEEP_BATCH = 500
PENDING = (Submission.Status.QUEUED, Submission.Status.RUNNING)
SERVICE_FAULT = (
    "The service lost this grading twice (its worker stopped while your code ran), so "
    "it was not judged and does not count. Submit again."
)
GRADING_FAULT = (
    "The service failed while grading this submission, so it was not judged and does "
    "not count. Submit again, and report it if it happens again."
)


class LabsUnavailable(Exception):
    """No sandbox can run lab code here; ``reason`` says why, in words."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class CodeInvalid(ValueError):
    """The submitted code is not what a submission takes; the message says what is."""


class SubmissionPending(Exception):
    """The learner already has a submission queued or running: ``submission`` is it,
    ``retry_after`` the seconds after which its result should be in."""

    def __init__(self, submission: Submission, retry_after: int):
        super().__init__(f"Submission {submission.pk} is still {submission.status}.")
        self.submission = submission
        self.retry_after = retry_after


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


def lease_seconds() -> float:
    """How long a claimed grading may run before another worker may take it over: the
    run's wall limit and ``STUDY_LAB_LEASE_MARGIN_SECONDS``."""
    return grading.lab_limits().wall_seconds + float(settings.STUDY_LAB_LEASE_MARGIN_SECONDS)


def retry_after(submission: Submission, *, now: dt.datetime) -> int:
    """Seconds until a pending submission's result should be in: the rest of a running
    grading's lease, or a run's wall limit for a queued one (at least 1)."""
    seconds = grading.lab_limits().wall_seconds
    if submission.status == Submission.Status.RUNNING and submission.lease_until is not None:
        seconds = (submission.lease_until - now).total_seconds()
    return max(1, math.ceil(min(seconds, lease_seconds())))


def _refuse_if_pending(learner: Any) -> None:
    pending = pending_submission(learner=learner)
    if pending is not None:
        raise SubmissionPending(pending, retry_after(pending, now=timezone.now()))


def submission_create(*, learner: Any, lab_slug: str, code: Any) -> Submission:
    """Save a submission of ``lab_slug`` and queue its grading.

    ``LabNotFound`` for an unknown lab, ``CodeInvalid`` for code it cannot take,
    ``LabsUnavailable`` when no sandbox can start and ``SubmissionPending`` while the
    learner has a submission queued or running; in each case nothing is saved. A broker
    that fails is no error: the submission is saved, queued, and the sweep sends it.
    """
    lab = lab_get(lab_slug)
    problem = code_problem(code)
    if problem is not None:
        raise CodeInvalid(problem)
    reason = grading.sandbox_unavailable()
    if reason is not None:
        raise LabsUnavailable(reason)
    _refuse_if_pending(learner)
    try:
        return _submission_save(learner=learner, lab_slug=lab.slug, code=code)
    except IntegrityError:
        _refuse_if_pending(learner)  # a concurrent request saved one first
        raise


@transaction.atomic
def _submission_save(*, learner: Any, lab_slug: str, code: str) -> Submission:
    now = timezone.now()
    submission = Submission.objects.create(
        learner=learner, lab=lab_slug, code=code, seed=secrets.randbits(63), published_at=now
    )
    reviews.submitted(
        learner=learner, lab_slug=lab_slug, submission_id=submission.pk, at=submission.created_at
    )
    # robust: whatever the broker or the database do after the commit, the request
    # answers 202; the sweep sends what was not sent.
    transaction.on_commit(partial(_publish_new, submission.pk, now), robust=True)
    return submission


def _publish_new(submission_id: int, stamp: dt.datetime) -> None:
    if not publish_grading(submission_id):
        # Not sent: the next sweep sends it, without waiting out the minute.
        Submission.objects.filter(pk=submission_id, published_at=stamp).update(published_at=None)


# --- Claiming and grading -------------------------------------------------------------


def _expired(now: dt.datetime) -> QuerySet[Submission]:
    """Running submissions whose lease ran out: their worker is gone (or never said)."""
    return Submission.objects.filter(status=Submission.Status.RUNNING).filter(
        Q(lease_until__lt=now) | Q(lease_until__isnull=True)
    )


def _claim(submission_id: int, now: dt.datetime | None = None) -> int | None:
    """Claim a grading: a queued submission, or a running one past its lease while it
    has attempts left. The attempt claimed (the fence its result is stored under), or
    None when there is nothing to claim."""
    now = timezone.now() if now is None else now
    claimed = {
        "status": Submission.Status.RUNNING,
        "started_at": now,
        "lease_until": now + dt.timedelta(seconds=lease_seconds()),
        "attempts": F("attempts") + 1,
    }
    took = Submission.objects.filter(pk=submission_id, status=Submission.Status.QUEUED).update(
        **claimed
    ) or _expired(now).filter(pk=submission_id, attempts__lt=MAX_ATTEMPTS).update(**claimed)
    if not took:
        return None
    return Submission.objects.values_list("attempts", flat=True).get(pk=submission_id)


def submission_grade(*, submission_id: int) -> Submission | None:
    """Claim a submission's grading, grade it and store the result; None when there was
    nothing to claim.

    Idempotent: a second run of the task (a redelivery, the sweep's resend) finds the
    submission claimed or stored and does nothing. A running submission whose lease ran
    out is taken over once; past that it fails as the service's fault. A lab gone from
    the catalogue, or a sandbox that cannot run, leaves it ``failed`` with the reason.
    """
    now = timezone.now()
    attempt = _claim(submission_id, now)
    if attempt is None:
        _abandon_exhausted(now, pk=submission_id)
        return None
    submission = Submission.objects.get(pk=submission_id)
    try:
        graded = _graded(submission)
    except Exception:  # the service's own fault (a time limit, a bug): it does not count
        logger.exception("Grading lab submission %s failed", submission_id)
        graded = grading.Graded(status="failed", diagnosis=GRADING_FAULT)
    return _store(submission=submission, graded=graded, attempt=attempt)


def _graded(submission: Submission) -> grading.Graded:
    try:
        lab = lab_get(submission.lab)
    except LabNotFound:
        return grading.Graded(
            status="failed", diagnosis=f"The lab {submission.lab!r} is no longer offered."
        )
    return grading.grade(lab=lab, code=submission.code, seed=submission.seed)


def _store(*, submission: Submission, graded: grading.Graded, attempt: int) -> Submission:
    """Store ``graded`` while the claim ``attempt`` still holds; a grading taken over
    since stores nothing, and the submission comes back as stored by the other."""
    if not _stored(submission=submission, graded=graded, attempt=attempt):
        submission.refresh_from_db()
    return submission


@transaction.atomic
def _stored(
    *, submission: Submission, graded: grading.Graded, attempt: int, fence: Q | None = None
) -> bool:
    """Write ``graded`` on ``submission`` if it is running under claim ``attempt`` (and
    ``fence``, when given), and tell the review side; whether it was written."""
    submission.status = graded.status
    submission.passed = graded.passed if graded.status == Submission.Status.DONE else None
    submission.tests = graded.tests
    submission.diagnosis = graded.diagnosis
    submission.output = graded.output
    submission.duration_ms = graded.duration_ms
    submission.finished_at = timezone.now()
    submission.lease_until = None
    stored = (
        Submission.objects.filter(pk=submission.pk, status=Submission.Status.RUNNING)
        .filter(Q(attempts=attempt) & (fence or Q()))
        .update(
            status=submission.status,
            passed=submission.passed,
            tests=submission.tests,
            diagnosis=submission.diagnosis,
            output=submission.output,
            duration_ms=submission.duration_ms,
            finished_at=submission.finished_at,
            lease_until=None,
        )
    )
    if stored:
        _tell_review_side(submission)
    return bool(stored)


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
    short), as the service's fault; None when it is not running."""
    submission = Submission.objects.filter(
        pk=submission_id, status=Submission.Status.RUNNING
    ).first()
    if submission is None:
        return None
    graded = grading.Graded(status="failed", diagnosis=reason)
    if not _stored(submission=submission, graded=graded, attempt=submission.attempts):
        return None
    return submission


def _abandon_exhausted(now: dt.datetime, *, pk: int | None = None) -> int:
    """Fail the gradings whose lease ran out with no attempt left (taken over once
    already): the service's fault, so the review binding is freed. How many failed."""
    rows = _expired(now).filter(attempts__gte=MAX_ATTEMPTS)
    if pk is not None:
        rows = rows.filter(pk=pk)
    graded = grading.Graded(status="failed", diagnosis=SERVICE_FAULT)
    fence = Q(lease_until__lt=now) | Q(lease_until__isnull=True)
    return sum(
        _stored(submission=submission, graded=graded, attempt=submission.attempts, fence=fence)
        for submission in rows.order_by("pk")[:SWEEP_BATCH]
    )


# --- The sweep ------------------------------------------------------------------------


def submissions_sweep(*, at: dt.datetime) -> dict[str, int]:
    """Send again every grading that may have been lost; fail those lost twice.

    - a submission queued for over ``REPUBLISH_AFTER`` (its send failed, or the broker
      lost it), or never sent;
    - a running one past its lease (its worker was killed) not sent since it was
      claimed, or not within ``REPUBLISH_AFTER``: the task takes it over;
    - a running one past its lease with no attempt left fails as the service's fault.

    Each row is taken with a conditional UPDATE of ``published_at``, so two sweeps at
    once send a submission once, and a second sweep right after sends nothing.
    Returns ``{"published": n, "failed": m}``.
    """
    failed = _abandon_exhausted(at)
    cutoff = at - REPUBLISH_AFTER
    unsent = Q(published_at__isnull=True) | Q(published_at__lt=cutoff)
    queued = Q(status=Submission.Status.QUEUED) & unsent
    expired = Q(lease_until__lt=at) | Q(lease_until__isnull=True)
    lost = Q(status=Submission.Status.RUNNING) & expired
    lost &= unsent | Q(published_at__lt=F("started_at"))
    candidates = list(
        Submission.objects.filter(queued | lost)
        .order_by("created_at", "pk")
        .values_list("pk", "published_at")[:SWEEP_BATCH]
    )
    published = 0
    for pk, stamp in candidates:
        taken = Submission.objects.filter(pk=pk, status__in=PENDING, published_at=stamp)
        if stamp is None:
            taken = Submission.objects.filter(pk=pk, status__in=PENDING, published_at__isnull=True)
        if taken.update(published_at=at) and publish_grading(pk):
            published += 1
    return {"published": published, "failed": failed}
