"""Tables of the labs: a learner's submissions. What a lab is lives in the catalogue."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class Submission(models.Model):
    """One run of a learner's code against a lab, from queued to judged.

    ``lab`` is the catalogue's slug (``labs.catalogue``), not a foreign key: the labs
    are code, not rows. ``seed`` makes the lab's calls, so a submission can be judged
    again on the same inputs.

    A grading is claimed under a lease (``labs.services``): ``attempts`` counts the
    claims, ``lease_until`` is when a running grading may be taken over (its worker
    was killed), ``published_at`` when its grading task was last sent to the broker
    (null: never, or the send failed), so the sweep knows what to send again. A
    learner has at most one submission queued or running (the database says so).
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    learner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lab_submissions"
    )
    lab = models.SlugField(max_length=80, db_index=False)
    code = models.TextField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    # True exactly when every test passed; null until the submission is judged.
    passed = models.BooleanField(null=True, blank=True)
    tests = models.JSONField(default=list, blank=True)  # [{name, passed, message}]
    diagnosis = models.TextField(blank=True, default="")
    output = models.TextField(blank=True, default="")  # what the code printed, capped
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    seed = models.BigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    lease_until = models.DateTimeField(null=True, blank=True)
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The sweep: what is queued or running, by when it was last sent.
            models.Index(
                fields=["published_at"],
                condition=Q(status__in=["queued", "running"]),
                name="submission_pending_sweep",
            ),
            # A learner's submissions of one lab, newest first.
            models.Index(
                "learner", "lab", models.F("created_at").desc(), name="submission_learner_lab"
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(passed__isnull=True) | Q(status="done"),
                name="submission_passed_only_when_done",
            ),
            # One submission in flight per learner: a second is refused (409), so a
            # learner who floods the queue holds one worker at most.
            models.UniqueConstraint(
                fields=["learner"],
                condition=Q(status__in=["queued", "running"]),
                name="submission_one_pending_per_learner",
            ),
        ]

    def __str__(self) -> str:
        return f"Submission {self.pk} of {self.lab} by {self.learner_id}: {self.status}"
