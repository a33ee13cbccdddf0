"""Reads of exercises. A learner only ever reaches their own exercises."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet

from exercises.kinds import KINDS
from exercises.models import Exercise, Prediction


def exercise_for_owner(*, owner, exercise_id: int) -> Exercise:
    """The owner's exercise; ``Exercise.DoesNotExist`` for anyone else's (answered as 404)."""
    return Exercise.objects.get(pk=exercise_id, owner=owner)


def exercises_for_owner(*, owner) -> QuerySet[Exercise]:
    """The owner's exercises, newest first."""
    return (
        Exercise.objects.filter(owner=owner)
        .order_by("-created_at", "-id")
        .prefetch_related("predictions", "attempt_set")
    )


def exercise_kinds() -> list[dict[str, Any]]:
    """The catalogue of kinds with their parameters, in registration order."""
    return [kind.describe() for kind in KINDS.values()]


def prediction_accuracy(*, owner, since) -> dict[str, Any]:
    """``{made, right, accuracy}`` over the owner's predictions made at or after ``since``
    (exercises and playground together); ``accuracy`` is null with none."""
    counts = Prediction.objects.filter(owner=owner, created_at__gte=since).aggregate(
        made=Count("id"), right=Count("id", filter=Q(correct=True))
    )
    made, right = counts["made"], counts["right"]
    return {"made": made, "right": right, "accuracy": round(right / made, 4) if made else None}
