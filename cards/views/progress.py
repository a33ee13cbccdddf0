"""The progress page: how far the learner is in each topic of their decks."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .. import topics
from ..services.memory import memory_page_context
from .common import study_today

GROUPS = (("tag", "Tags"), ("kind", "Exercise kinds"), ("lab", "Labs"))


def _percent(part: int, whole: int) -> float:
    return round(100 * part / whole, 1) if whole else 0.0


@login_required
@require_GET
def progress(request: HttpRequest) -> HttpResponse:
    today = study_today(request.user)
    rows = [
        {
            **topic.as_dict(),
            "learned_pct": _percent(topic.learned, topic.cards),
            "mastered_pct": _percent(topic.mastered, topic.cards),
            "recall_pct": None if topic.recall_30d is None else round(100 * topic.recall_30d),
        }
        for topic in topics.topics_of(learner=request.user, today=today)
    ]
    groups = [
        {"type": kind, "title": title, "topics": [row for row in rows if row["type"] == kind]}
        for kind, title in GROUPS
    ]
    return render(
        request,
        "cards/progress.html",
        {
            "today": today,
            "groups": [group for group in groups if group["topics"]],
            "topics": rows,
            **memory_page_context(learner=request.user, today=today),
        },
    )
