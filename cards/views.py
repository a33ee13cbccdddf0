"""Server-rendered learner pages: accounts, dashboard, decks and the review session.

Each view parses its input, calls one service or selector and renders; the rules
(ladder, enrolment, idempotency) stay in ``cards.services``.
"""

from __future__ import annotations

import datetime as dt

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from exercises import services as exercise_services
from exercises import views as exercise_views
from exercises.checking import AnswerError
from exercises.models import Exercise

from . import selectors, services
from .forms import ProfileForm, ReviewForm, SignUpForm
from .models import Card, Deck

HISTORY_WEEKS = 26
REVIEW_BATCH = 20  # due cards read at a time while looking for one that can be shown


def _today(user) -> dt.date:
    return selectors.learner_today(learner=user, at=timezone.now())


def _apply_errors(form, exc: ValidationError) -> None:
    """Put a service's per-field ValidationError next to the matching form fields."""
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


# --- Accounts ---------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("dashboard")
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user, _token = services.register(
                username=form.cleaned_data["username"],
                password=form.cleaned_data["password1"],
                email=form.cleaned_data.get("email") or "",
                timezone=form.cleaned_data["timezone"],
            )
        except ValidationError as exc:
            if hasattr(exc, "error_dict") and "password" in exc.error_dict:
                exc = ValidationError(
                    {"password1": exc.error_dict.pop("password"), **exc.error_dict}
                )
            _apply_errors(form, exc)
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(
                request, f"Welcome, {user.username}! Enrol in a deck to start studying."
            )
            return redirect("dashboard")
    return render(
        request, "registration/signup.html", {"form": form}, status=400 if form.errors else 200
    )


@login_required
@require_http_methods(["GET", "POST"])
def profile(request: HttpRequest) -> HttpResponse:
    current = selectors.learner_profile(request.user)
    initial = {
        "email": request.user.email,
        "timezone": current.timezone,
        "day_starts_at": current.day_starts_at,
        "reminders": current.reminders,
        "reminder_hour": current.reminder_hour,
    }
    form = ProfileForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            services.profile_update(user=request.user, **form.cleaned_data)
        except ValidationError as exc:
            _apply_errors(form, exc)
        else:
            messages.success(request, "Profile saved.")
            return redirect("profile")
    return render(
        request,
        "cards/profile.html",
        {"form": form, "today": _today(request.user)},
        status=400 if form.errors else 200,
    )


# --- Dashboard and decks ----------------------------------------------------------


def dashboard(request: HttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        return render(request, "cards/landing.html")
    learner = request.user
    today = _today(learner)
    stats = selectors.learner_stats(learner=learner, today=today)
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
            "next_due_on": selectors.next_due_on(learner=learner),
            "busy_forecast": [day for day in stats["forecast"] if day["count"]],
        },
    )


@login_required
@require_POST
def deck_enroll(request: HttpRequest, slug: str) -> HttpResponse:
    deck = get_object_or_404(Deck, slug=slug)
    result = services.enroll(learner=request.user, deck=deck, at=timezone.now())
    if result.scheduled:
        messages.success(
            request,
            f"Enrolled in “{deck.title}”: {result.scheduled} new card"
            f"{'' if result.scheduled == 1 else 's'}, first due on {result.first_due_on:%a %d %b %Y}.",
        )
    else:
        messages.success(request, f"You are enrolled in “{deck.title}”; your progress is kept.")
    return redirect("dashboard")


@login_required
@require_POST
def deck_unenroll(request: HttpRequest, slug: str) -> HttpResponse:
    deck = get_object_or_404(Deck, slug=slug)
    services.unenroll(learner=request.user, deck=deck)
    messages.success(
        request, f"Left “{deck.title}”. Its cards left your queue; your history is kept."
    )
    return redirect("dashboard")


# --- Review session ---------------------------------------------------------------


def _session_progress(learner, today: dt.date, due: int) -> dict:
    done = selectors.review_calendar(learner=learner, start=today, end=today).get(today, 0)
    return {"position": done + 1, "total": done + due, "done": done}


@login_required
@require_http_methods(["GET", "POST"])
def review(request: HttpRequest) -> HttpResponse:
    learner = request.user
    if request.method == "POST":
        return _review_post(request)
    today = _today(learner)
    state, exercise, skipped = _next_reviewable(learner, today)
    if state is None:
        return render(
            request,
            "cards/review_done.html",
            {"today": today, "next_due_on": selectors.next_due_on(learner=learner)},
        )
    count = selectors.due_count(learner=learner, today=today)
    context = {"state": state, "card": state.card, "today": today, "due": count}
    context.update(_session_progress(learner, today, count))
    if state.card.kind == Card.Kind.EXERCISE:
        if exercise is None:
            # The card's exercise spec is broken (logged by the service); say so plainly.
            context["exercise_unavailable"] = True
        else:
            context.update(
                exercise_views.exercise_context(
                    exercise, submit_url=reverse("exercise-page-submit", args=[exercise.pk])
                )
            )
    context["skipped"] = skipped
    return render(request, "cards/review.html", context)


def _next_reviewable(learner, today: dt.date):
    """``(state, exercise, skipped)``: the oldest due card that can be reviewed now.

    An exercise card whose spec cannot generate an exercise cannot be reviewed and
    would otherwise sit at the head of the queue, hiding every card behind it. Such
    cards are passed over (counted in ``skipped``) while anything else is due; alone,
    the first of them is shown as it is.
    """
    due = selectors.due_reviews(learner=learner, today=today)
    first = None
    skipped = 0
    while True:
        batch = list(due[skipped : skipped + REVIEW_BATCH])
        for state in batch:
            if state.card.kind != Card.Kind.EXERCISE:
                return state, None, skipped
            exercise = services.exercise_for_review(learner=learner, card=state.card, today=today)
            if exercise is not None:
                return state, exercise, skipped
            first = first or (state, exercise)
            skipped += 1
        if len(batch) < REVIEW_BATCH:
            return (*first, 0) if first else (None, None, 0)


def _review_post(request: HttpRequest) -> HttpResponse:
    form = ReviewForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errs)}" for name, errs in form.errors.items())
        return HttpResponseBadRequest(
            f"Expected a card id and a result of 'pass' or 'fail' ({problems}).",
            content_type="text/plain",
        )
    try:
        log = services.review_record(
            learner=request.user,
            card=form.cleaned_data["card"],
            result=form.cleaned_data["result"],
            at=timezone.now(),
        )
    except services.NotDue as exc:
        messages.info(
            request, f"That card was already reviewed; it is next due on {exc.due_on:%a %d %b %Y}."
        )
    except services.NotScheduled:
        messages.warning(request, "That card is not in your review queue any more.")
    except services.ExerciseCardReview:
        messages.warning(request, "Exercise cards are reviewed by submitting their exercise.")
    else:
        word = "Good" if log.result == "pass" else "Again"
        messages.success(
            request,
            f"{word}: next review in {log.interval_days} day{'s' if log.interval_days != 1 else ''}.",
        )
    return redirect("review")


# --- Exercise submissions ---------------------------------------------------------
# Every exercise answered on the site comes here: the study core records the review
# of a review-bound exercise on its first submission; other submissions are practice.


@login_required
@require_POST
def exercise_submit(request: HttpRequest, pk: int) -> HttpResponse:
    exercise = exercise_views.owned_exercise(request, pk)
    closed = exercise_services.closed_error(exercise)
    if closed is not None:
        # Closed whatever the cells hold, as the API answers 409 before reading the body.
        messages.warning(request, str(closed))
        return redirect("exercise-page", pk=exercise.pk)
    answers, typed, problems = exercise_views.parse_answer_cells(exercise.asks, request.POST)
    if not problems:
        try:
            outcome = services.exercise_review_submit(
                learner=request.user, exercise_id=exercise.pk, answers=answers, at=timezone.now()
            )
        except Exercise.DoesNotExist:
            raise Http404("No such exercise.") from None  # purged since the page was read
        except exercise_services.ExerciseClosed as exc:
            messages.warning(request, str(exc))
            return redirect("exercise-page", pk=exercise.pk)
        except AnswerError as exc:
            problems = {part: [message] for part, message in exc.errors.items()}
        else:
            review = outcome.result.get("review")
            url = reverse("exercise-page", args=[exercise.pk])
            if review is not None:
                word = "Good" if review["result"] == "pass" else "Again"
                days = review["interval_days"]
                messages.success(
                    request,
                    f"Review recorded as {word}: next review in {days} day{'s' if days != 1 else ''}.",
                )
                url += "?from=review"
            return redirect(url)
    context = exercise_views.exercise_context(
        exercise,
        submit_url=reverse("exercise-page-submit", args=[exercise.pk]),
        typed=typed,
        problems=problems,
        invalid=exercise_views.invalid_cells(exercise.asks, request.POST, problems),
    )
    return render(request, "exercises/exercise_detail.html", context, status=400)
