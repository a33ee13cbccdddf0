"""Tables of generated exercises and their attempts. ``exercises`` never imports ``cards``."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone


class ExerciseQuerySet(models.QuerySet["Exercise"]):
    def unattempted(self) -> ExerciseQuerySet:
        """Exercises no submission has used an attempt of (a prediction uses none)."""
        return self.filter(attempts_used=0)


class Exercise(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="exercises"
    )
    kind = models.CharField(max_length=40)
    prompt = models.TextField(blank=True, default="", help_text="Markdown with $...$ math.")
    params = models.JSONField(help_text="Normalised parameters, including the seed.")
    seed = models.BigIntegerField()
    inputs = models.JSONField()
    asks = models.JSONField(help_text="[{name, shape}] in the order they are asked.")
    solution = models.JSONField(help_text="Expected answers by part.")
    rtol = models.FloatField(default=0.01)
    atol = models.FloatField(default=0.005)
    max_attempts = models.PositiveSmallIntegerField(default=3)
    attempts_used = models.PositiveSmallIntegerField(default=0)
    solved = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)

    objects = ExerciseQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="exercise_owner_recent"),
            models.Index(fields=["attempts_used", "created_at"], name="exercise_housekeeping"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(attempts_used__lte=F("max_attempts")), name="exercise_attempts_bound"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} (seed {self.seed})"


class Attempt(models.Model):
    exercise = models.ForeignKey(Exercise, on_delete=models.CASCADE, related_name="attempt_set")
    number = models.PositiveSmallIntegerField()
    answers = models.JSONField()
    correct = models.BooleanField()
    score = models.FloatField()
    result = models.JSONField(help_text="The per-part verdicts sent back to the learner.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["exercise", "number"]
        constraints = [
            models.UniqueConstraint(fields=["exercise", "number"], name="attempt_number_unique"),
        ]

    def __str__(self) -> str:
        return f"attempt {self.number} of exercise #{self.exercise_id}"


class Prediction(models.Model):
    """A learner's answer to a question asked before the numbers, and whether they bore it out.

    ``exercise`` is set for an exercise's prediction (``ask`` is the part's name; one per
    exercise and part) and null for one made in the playground (``ask`` is
    ``playground:<preset>``) or once its exercise is purged. ``expected`` is what the
    numbers say.
    """

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="predictions"
    )
    # SET_NULL: a prediction outlives its exercise being purged, so the accuracy over
    # the last 30 days keeps counting it.
    exercise = models.ForeignKey(
        Exercise, on_delete=models.SET_NULL, null=True, blank=True, related_name="predictions"
    )
    ask = models.CharField(max_length=80)
    answer = models.CharField(max_length=200)
    expected = models.CharField(max_length=200)
    correct = models.BooleanField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "created_at"], name="prediction_owner_recent"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["exercise", "ask"],
                condition=Q(exercise__isnull=False),
                name="prediction_once_per_exercise_ask",
            ),
        ]

    def __str__(self) -> str:
        return f"prediction {self.answer!r} ({'right' if self.correct else 'wrong'})"
