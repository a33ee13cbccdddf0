"""A hand-written due queue with no framework around it: the yardstick of ``reviews/due/``.

It does what the endpoint must do and nothing more: reads the token, computes the
learner's today, counts what is due, fetches the same page with its tags through
``.values()`` and returns a ``JsonResponse``. The benchmarks serve it beside the API
(``benchmarks/load_urls.py``) and compare the two in the same run.
"""

from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse
from django.utils import timezone
from rest_framework.authtoken.models import Token

from cards import ladder
from cards.models import Card, ReviewState

PAGE_SIZE = 20


PAGE_FIELDS = (
    "step",
    "due_on",
    "card_id",
    "card__deck__slug",
    "card__key",
    "card__kind",
    "card__prompt",
    "card__answer",
    "card__exercise",
    "card__position",
    "card__is_active",
    "card__created_at",
    "card__updated_at",
)


def baseline_due(request):
    key = request.headers.get("Authorization", "").removeprefix("Token ")
    row = (
        Token.objects.filter(key=key)
        .values("user_id", "user__profile__timezone", "user__profile__day_starts_at")
        .first()
    )
    if row is None:
        return JsonResponse({"detail": "Invalid token."}, status=401)
    today = ladder.study_day(
        timezone.now(), row["user__profile__timezone"] or "UTC", row["user__profile__day_starts_at"]
    )
    due = ReviewState.objects.filter(
        learner_id=row["user_id"], scheduled=True, suspended=False, due_on__lte=today
    ).exclude(buried_on=today)
    count = due.count()
    page = list(due.order_by("due_on", "id").values(*PAGE_FIELDS)[:PAGE_SIZE])
    tags = tags_by_card([r["card_id"] for r in page])
    ladder_days = settings.STUDY_LADDER_DAYS
    results = [
        {
            "card": card_json(r, tags.get(r["card_id"], [])),
            "step": r["step"],
            "interval_days": ladder_days[r["step"]],
            "due_on": r["due_on"],
        }
        for r in page
    ]
    return JsonResponse(
        {"today": today, "count": count, "next": None, "previous": None, "results": results}
    )


def tags_by_card(card_ids: list[int]) -> dict[int, list[str]]:
    tags: dict[int, list[str]] = {}
    for pair in (
        Card.tags.through.objects.filter(card_id__in=card_ids)
        .order_by("tag__name")
        .values("card_id", "tag__name")
    ):
        tags.setdefault(pair["card_id"], []).append(pair["tag__name"])
    return tags


def card_json(r: dict, tags: list[str]) -> dict:
    return {
        "id": r["card_id"],
        "deck": r["card__deck__slug"],
        "key": r["card__key"],
        "kind": r["card__kind"],
        "prompt": r["card__prompt"],
        "answer": r["card__answer"],
        "tags": tags,
        "exercise": r["card__exercise"],
        "position": r["card__position"],
        "active": r["card__is_active"],
        "created_at": r["card__created_at"],
        "updated_at": r["card__updated_at"],
    }
