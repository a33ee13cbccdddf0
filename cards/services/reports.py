"""Learners' reports of problems with cards and exercises."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from exercises.models import Exercise

from ..models import Card, Report

MAX_REPORT_CHARS = 2000


class ReportTargetMissing(Exception):
    """The card (or exercise) named in a report is not one the learner can see."""

    def __init__(self, field: str):
        super().__init__(field)
        self.field = field


@transaction.atomic
def report_create(
    *, learner: Any, card_id: int, text: str, exercise_id: int | None = None
) -> Report:
    card = Card.objects.filter(pk=card_id, is_active=True).first()
    if card is None:
        raise ReportTargetMissing("card")
    if (
        exercise_id is not None
        and not Exercise.objects.filter(pk=exercise_id, owner=learner).exists()
    ):
        raise ReportTargetMissing("exercise")
    return Report.objects.create(learner=learner, card=card, exercise_id=exercise_id, text=text)


def report_set_resolved(*, report_ids: list[int], resolved: bool) -> int:
    return Report.objects.filter(pk__in=report_ids).update(resolved=resolved)
