"""The lesson page: a deck's lesson, readable by anyone before enrolling, ending with the
next step (enrol, review, or sign up)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from .. import lesson
from ..models import Deck


@require_GET
def deck_lesson(request: HttpRequest, slug: str) -> HttpResponse:
    deck = get_object_or_404(Deck, slug=slug)
    return render(
        request,
        "cards/lesson.html",
        {
            "deck": deck,
            "lesson": lesson.deck_lesson(deck=deck),
            "enrolled": lesson.enrolled_in(learner=request.user, deck=deck),
        },
    )
