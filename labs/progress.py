"""The learner's standing on each lab, for the list of labs: one grouped query."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q

from labs.models import Submission


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
