"""Fast renderers: a serializer's output built directly from rows, where a request must be fast.

Each stands for a serializer of ``cards.serializers`` (the definition, and the OpenAPI
schema) and is held equal to it by a test.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework import serializers

from .ladder import interval_days
from .models import Card


def due_items(
    rows: list[dict],
    *,
    exercises: Mapping[int, Any],
    retrievability: Mapping[int, float] | None = None,
) -> list[dict]:
    """``DueItemSerializer``'s output for the rows of ``cards.due.due_page``, built directly.

    The due queue's fast renderer: ``reviews/due/`` must answer at the rate of a
    hand-written view (``benchmarks/bench_load``), and a serializer pass over a page of
    nested cards costs more than its queries. The fields are ``DueItemSerializer``'s and,
    for ``card``, ``CardSerializer``'s (``cards.serializers``);
    ``tests/cards/test_due_queries.py`` holds the two equal. ``exercises`` maps an
    exercise card's id to its serialized bound exercise; ``retrievability`` a card's id to
    today's predicted recall (``cards.services.memory.page_retrievability``; absent: null).
    """
    recall = retrievability or {}
    ladder_days = settings.STUDY_LADDER_DAYS
    # CardSerializer's datetime output, with the request's time zone looked up once.
    datetimes = serializers.DateTimeField(
        default_timezone=timezone.get_current_timezone() if settings.USE_TZ else None
    )
    items = []
    for row in rows:
        spec = row["card__exercise"]
        item = {
            "card": {
                "id": row["card_id"],
                "deck": row["card__deck__slug"],
                "key": row["card__key"],
                "kind": row["card__kind"],
                "prompt": row["card__prompt"],
                "answer": row["card__answer"],
                "tags": row["tag_names"],
                "exercise": None
                if spec is None
                else {"kind": spec.get("kind"), "params": spec.get("params") or {}},
                "lab": None if row["card__lab"] is None else {"slug": row["card__lab"]},
                "points": list(row["card__points"] or []),
                "lesson_section": row["card__lesson_section"],
                "position": row["card__position"],
                "active": row["card__is_active"],
                "created_at": datetimes.to_representation(row["card__created_at"]),
                "updated_at": datetimes.to_representation(row["card__updated_at"]),
            },
            "step": row["step"],
            "interval_days": interval_days(row["step"], ladder_days),
            "due_on": row["due_on"],
            "leech": row["leech"],
            "retrievability": recall.get(row["card_id"]),
        }
        if row["card__kind"] == Card.Kind.EXERCISE:
            item["exercise"] = exercises.get(row["card_id"])
        items.append(item)
    return items


def review_item(log: Any) -> dict:
    """``ReviewSerializer``'s output for one review log entry, built directly.

    A review submission's answer: a ``ModelSerializer`` builds its fields on every
    instance, which cost a review submission about as much as its writes' Python
    (docs/benchmarks.md, "Request path"). ``tests/cards/test_renderers.py`` holds the two
    equal.
    """
    datetimes = serializers.DateTimeField(
        default_timezone=timezone.get_current_timezone() if settings.USE_TZ else None
    )
    return {
        "id": log.pk,
        "card": log.card_id,
        "result": log.result,
        "reviewed_at": datetimes.to_representation(log.reviewed_at),
        "study_day": log.study_day.isoformat(),
        "step_before": log.step_before,
        "step": log.step_after,
        "interval_days": log.interval_days,
        "due_before": log.due_before.isoformat(),
        "due_on": log.due_after.isoformat(),
        "undo_of": log.undo_of_id,
        "answer_text": log.answer_text,
    }
