"""The dashboard, and enrolling in or leaving a deck."""

from __future__ import annotations

import datetime as dt

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from .. import due, selectors, services
from ..models import Deck
from ..next_steps import next_steps
from ..stats import learner_stats
from .common import study_today

HISTORY_WEEKS = 26


def dashboard(request: HttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        return render(request, "cards/landing.html")
    learner = request.user
    today = study_today(learner)
    stats = learner_stats(learner=learner, today=today)
    history_start = (
        today - dt.timedelta(days=today.weekday()) - dt.timedelta(weeks=HISTORY_WEEKS - 1)
    )
    calendar = selectors.review_calendar(learner=learner, start=history_start, end=today)
    return render(
        request,
        "cards/dashboard.html",
        {
            "today": today,
            "stats": stats,
            "decks": selectors.decks_for(learner=learner),
            "calendar": calendar,
            "history_weeks": HISTORY_WEEKS,
            "next_due_on": due.next_due_on(learner=learner),
            "busy_forecast": [day for day in stats["forecast"] if day["count"]],
            "suspended": selectors.suspended_states(learner=learner),
            "next_steps": next_steps(learner=learner, today=today, forecast=stats["forecast"]),
        },
    )


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@login_required
@require_POST
def deck_enroll(request: HttpRequest, slug: str) -> HttpResponse:
    deck = get_object_or_404(Deck, slug=slug)
    result = services.enroll(learner=request.user, deck=deck, at=timezone.now())
    if result.scheduled:
        waiting = (
            f" {_plural(result.waiting, 'more card')} wait their turn: each day you review, "
            "up to your pace of new cards joins them."
            if result.waiting
            else ""
        )
        messages.success(
            request,
            f"Enrolled in “{deck.title}”: {_plural(result.scheduled, 'new card')}, first due "
            f"on {result.first_due_on:%a %d %b %Y}.{waiting}",
        )
    else:
        messages.success(request, f"You are enrolled in “{deck.title}”; your progress is kept.")
    return redirect("dashboard")


@login_required
@require_POST
def deck_learn_more(request: HttpRequest, slug: str) -> HttpResponse:
    """ "Learn more today": the next batch of the deck's waiting cards, due at once."""
    deck = get_object_or_404(Deck, slug=slug)
    try:
        result = services.learn_more(learner=request.user, deck=deck, at=timezone.now())
    except services.NotEnrolled as exc:
        messages.error(request, str(exc))
        return redirect("dashboard")
    if result.scheduled:
        messages.success(
            request,
            f"{_plural(result.scheduled, 'new card')} of “{deck.title}” are due now; "
            f"{result.waiting} still wait.",
        )
    else:
        messages.info(request, f"No cards of “{deck.title}” are waiting: all are on your ladder.")
    return redirect("review" if result.scheduled else "dashboard")


@login_required
@require_POST
def deck_unenroll(request: HttpRequest, slug: str) -> HttpResponse:
    deck = get_object_or_404(Deck, slug=slug)
    services.unenroll(learner=request.user, deck=deck)
    messages.success(
        request, f"Left “{deck.title}”. Its cards left your queue; your history is kept."
    )
    return redirect("dashboard")
