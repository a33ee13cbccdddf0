"""Reads of the labs: the catalogue's labs, a learner's submissions, and their standing
on each lab."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet

from .catalogue import LABS
from .models import Submission
from .spec import Lab


class LabNotFound(LookupError):
    """No lab of the catalogue has that slug."""


def catalogue() -> Mapping[str, Lab]:
    """Every lab by slug, in the catalogue's order (``labs.catalogue.LABS``)."""
    return LABS


def labs_list() -> list[Lab]:
    """The labs in their list order (``Lab.position``, then the catalogue's order)."""
    labs = list(catalogue().values())
    return sorted(labs, key=lambda lab: lab.position)


def lab_get(slug: str) -> Lab:
    """The lab with that slug; ``LabNotFound`` when there is none."""
    lab = catalogue().get(slug) if isinstance(slug, str) else None
    if lab is None:
        raise LabNotFound(slug)
    return lab


def submission_for(*, learner: Any, submission_id: int) -> Submission:
    """One of the learner's submissions; ``Submission.DoesNotExist`` for anyone else's."""
    return Submission.objects.get(pk=submission_id, learner=learner)


def submissions_of(*, learner: Any, lab_slug: str) -> QuerySet[Submission]:
    """The learner's submissions of one lab, newest first."""
    return Submission.objects.filter(learner=learner, lab=lab_slug).order_by("-created_at", "-id")


def pending_submission(*, learner: Any) -> Submission | None:
    """The learner's submission queued or running, if any (there is one at most)."""
    return (
        Submission.objects.filter(
            learner=learner, status__in=(Submission.Status.QUEUED, Submission.Status.RUNNING)
        )
        .order_by("-created_at", "-id")
        .first()
    )


@dataclass(frozen=True)
class LabProgress:
    passed: bool  # some submission passed every test
    failed: bool  # judged at least once, and never passed
    pending: bool  # a submission is queued or running


def lab_progress(*, learner) -> dict[str, LabProgress]:
    """Each lab the learner has submitted to, by slug; a lab never tried is absent."""
    rows = (
        Submission.objects.filter(learner=learner)
        .values("lab")
        .annotate(
            passes=Count("pk", filter=Q(passed=True)),
            judged=Count("pk", filter=Q(status=Submission.Status.DONE)),
            pending=Count(
                "pk",
                filter=Q(status__in=(Submission.Status.QUEUED, Submission.Status.RUNNING)),
            ),
        )
        .order_by()
    )
    return {
        row["lab"]: LabProgress(
            passed=row["passes"] > 0,
            failed=row["passes"] == 0 and row["judged"] > 0,
            pending=row["pending"] > 0,
        )
        for row in rows
    }
