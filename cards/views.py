"""Server-rendered learner pages: accounts, dashboard, decks and the review session.

Each view parses its input, calls one service or selector and renders; the rules
(ladder, enrolment, idempotency) stay in ``cards.services``.
"""

from __future__ import annotations

import datetime as dt

from django.contrib import messages
from django.contrib.auth import login, logout, update_session_auth_hash
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    JsonResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from exercises import services as exercise_services
from exercises import views as exercise_views
from exercises.checking import AnswerError
from exercises.models import Exercise

from . import selectors, services
from .forms import AccountDeleteForm, PauseForm, ProfileForm, ReportForm, ReviewForm, SignUpForm
from .models import Card, Deck, ReviewLog
from .services import accounts as account_services
from .services import privacy
from .services.review_page import next_reviewable

HISTORY_WEEKS = 26


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
    today = _today(request.user)
    return render(
        request,
        "cards/profile.html",
        {
            "form": form,
            "today": today,
            **_account_context(request.user, current),
            # Study controls: the pause and the learner's reports.
            "pause_form": PauseForm(initial={"start": today, "days": 7}),
            "pause_end": selectors.pause_end(current),
            "paused_now": selectors.is_paused(learner=request.user, today=today),
            "reports": selectors.reports_of(learner=request.user).select_related("card")[:20],
        },
        status=400 if form.errors else 200,
    )


# --- Account lifecycle ----------------------------------------------------------------


def _account_context(user, profile) -> dict:
    confirmed = bool(user.email) and profile.confirmed_email == user.email
    return {
        "email_confirmed": confirmed,
        "reminders_unconfirmed": profile.reminders and not confirmed,
        "delete_form": AccountDeleteForm(prefix="delete"),
    }


def email_confirm(request: HttpRequest, token: str) -> HttpResponse:
    try:
        user = account_services.email_confirm(token=token)
    except ValidationError as exc:
        return render(
            request, "registration/email_confirm.html", {"error": exc.messages[0]}, status=400
        )
    return render(request, "registration/email_confirm.html", {"confirmed": user.email})


@login_required
@require_POST
def email_confirm_send(request: HttpRequest) -> HttpResponse:
    if not request.user.email:
        messages.warning(request, "Add an e-mail address first.")
    else:
        account_services.email_confirmation_send(user=request.user)
        messages.success(request, f"A confirmation link is on its way to {request.user.email}.")
    return redirect("profile")


@login_required
@require_http_methods(["GET", "POST"])
def password_change(request: HttpRequest) -> HttpResponse:
    form = PasswordChangeForm(request.user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            account_services.password_change(
                user=request.user,
                old_password=form.cleaned_data["old_password"],
                new_password=form.cleaned_data["new_password1"],
            )
        except ValidationError as exc:
            _apply_errors(form, exc)
        else:
            update_session_auth_hash(request, request.user)
            messages.success(request, "Password changed. Your API token was replaced too.")
            return redirect("profile")
    return render(
        request,
        "registration/password_change_form.html",
        {"form": form},
        status=400 if form.errors else 200,
    )


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    """Django's reset page; a new password also ends a lockout and revokes API tokens."""

    def form_valid(self, form):
        response = super().form_valid(form)
        account_services.password_was_reset(user=form.user)
        return response


@login_required
@require_http_methods(["GET"])
def account_export(request: HttpRequest) -> HttpResponse:
    response = JsonResponse(
        privacy.account_export(user=request.user),
        encoder=DjangoJSONEncoder,
        json_dumps_params={"indent": 2},
    )
    response["Content-Disposition"] = (
        f'attachment; filename="study-export-{request.user.get_username()}.json"'
    )
    return response


@login_required
@require_POST
def account_delete(request: HttpRequest) -> HttpResponse:
    form = AccountDeleteForm(request.POST, prefix="delete")
    if form.is_valid():
        try:
            privacy.account_delete(user=request.user, password=form.cleaned_data["password"])
        except ValidationError as exc:
            _apply_errors(form, exc)
        else:
            logout(request)
            messages.success(request, "Your account and its personal data were deleted.")
            return redirect("login")
    current = selectors.learner_profile(request.user)
    context = {
        "form": ProfileForm(
            initial={
                "email": request.user.email,
                "timezone": current.timezone,
                "day_starts_at": current.day_starts_at,
                "reminders": current.reminders,
                "reminder_hour": current.reminder_hour,
            }
        ),
        "today": _today(request.user),
        **_account_context(request.user, current),
        "delete_form": form,
    }
    return render(request, "cards/profile.html", context, status=400)


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
            "suspended": selectors.suspended_states(learner=learner),
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
    shown = next_reviewable(learner=learner, today=today)
    state, exercise = shown.state, shown.exercise
    if state is None:
        return render(
            request,
            "cards/review_done.html",
            {
                "today": today,
                "next_due_on": selectors.next_due_on(learner=learner),
                **controls_context(learner, today),
            },
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
    context["skipped"] = shown.skipped
    context.update(controls_context(learner, today, state.card, exercise))
    return render(request, "cards/review.html", context)


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
            if review is not None or request.GET.get("from") == "review":
                url += "?from=review"
            return redirect(url)
    context = exercise_views.exercise_context(
        exercise,
        submit_url=reverse("exercise-page-submit", args=[exercise.pk]),
        typed=typed,
        problems=problems,
        invalid=exercise_views.invalid_cells(exercise.asks, request.POST, problems),
    )
    if request.GET.get("from") == "review":
        context["from_review"] = True
        context["submit_url"] += "?from=review"
    return render(request, "exercises/exercise_detail.html", context, status=400)


# --- Study controls: undo, suspend, bury, card notes, reports, pause ---------------


def _back(request: HttpRequest, default: str = "review") -> HttpResponse:
    target = request.POST.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(target)
    return redirect(default)


def _card_id(pk: int) -> int:
    if not 1 <= pk <= 2**63 - 1:
        raise Http404("No such card.")
    return pk


@login_required
@require_POST
def review_undo(request: HttpRequest) -> HttpResponse:
    try:
        review_id = int(request.POST.get("review", ""))
    except ValueError:
        return HttpResponseBadRequest("Expected the id of a review to undo.", "text/plain")
    try:
        state = services.review_undo(learner=request.user, review_id=review_id, at=timezone.now())
    except ReviewLog.DoesNotExist:
        raise Http404("No such review of yours.") from None
    except services.UndoRefused as exc:
        messages.warning(request, str(exc))
    else:
        messages.success(
            request, f"Undone: the card is back where it was (due {state.due_on:%a %d %b %Y})."
        )
    return redirect("review")


@login_required
@require_POST
def card_suspend(request: HttpRequest, pk: int) -> HttpResponse:
    card_id = _card_id(pk)
    resume = request.POST.get("action") == "resume"
    try:
        if resume:
            services.card_resume(learner=request.user, card_id=card_id)
        else:
            services.card_suspend(learner=request.user, card_id=card_id)
    except services.NotScheduled:
        raise Http404("No such card on your ladder.") from None
    messages.success(
        request,
        "Card resumed: it is back in your queue."
        if resume
        else "Card suspended: it stays out of your queue until you resume it (see the dashboard).",
    )
    return _back(request)


@login_required
@require_POST
def card_bury(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        services.card_bury(learner=request.user, card_id=_card_id(pk), today=_today(request.user))
    except services.NotScheduled:
        raise Http404("No such card on your ladder.") from None
    messages.success(request, "Card buried until tomorrow.")
    return _back(request)


@login_required
def card_notes(request: HttpRequest, pk: int) -> HttpResponse:
    """A card's full text and the learner's controls, linked from the leech warning."""
    card = get_object_or_404(selectors.cards_visible_to(user=request.user), pk=_card_id(pk))
    state = selectors.scheduled_state(learner=request.user, card_id=card.pk)
    return render(
        request,
        "cards/card_notes.html",
        {
            "card": card,
            "state": state,
            "leech": card.pk in selectors.leech_card_ids(learner=request.user, card_ids=[card.pk]),
            "report_form": ReportForm(initial={"card": card.pk}),
        },
    )


@login_required
@require_POST
def report_create(request: HttpRequest) -> HttpResponse:
    form = ReportForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errs)}" for name, errs in form.errors.items())
        messages.warning(request, f"Your report was not sent ({problems}).")
        return _back(request)
    try:
        services.report_create(
            learner=request.user,
            card_id=form.cleaned_data["card"],
            exercise_id=form.cleaned_data.get("exercise"),
            text=form.cleaned_data["text"],
        )
    except services.ReportTargetMissing as exc:
        messages.warning(request, f"Your report was not sent: no such {exc.field}.")
    else:
        messages.success(request, "Thank you: your report was received. Staff will look at it.")
    return _back(request)


@login_required
@require_POST
def pause_set(request: HttpRequest) -> HttpResponse:
    today = _today(request.user)
    if request.POST.get("action") == "end":
        try:
            start, used = services.pause_finish(learner=request.user, today=today)
        except services.PauseRefused as exc:
            messages.warning(request, str(exc))
        else:
            messages.success(request, f"Pause ended after {used} day{'s' if used != 1 else ''}.")
        return redirect("profile")
    form = PauseForm(request.POST)
    if form.is_valid() and form.cleaned_data["start"] < today:
        form.add_error("start", f"Expected today ({today:%d %b %Y}) or a later date.")
    if not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errs)}" for name, errs in form.errors.items())
        messages.warning(request, f"Pause not set ({problems}).")
        return redirect("profile")
    try:
        services.pause_begin(
            learner=request.user,
            start=form.cleaned_data["start"],
            days=form.cleaned_data["days"],
            today=today,
        )
    except services.PauseRefused as exc:
        messages.warning(request, str(exc))
    else:
        days = form.cleaned_data["days"]
        messages.success(
            request,
            f"Paused from {form.cleaned_data['start']:%a %d %b %Y} for {days} "
            f"day{'s' if days != 1 else ''}; your due dates moved on by as much.",
        )
    return redirect("profile")


def controls_context(learner, today: dt.date, card=None, exercise=None) -> dict:
    """What the review page shows beside the card: undo, leech warning, report form."""
    context = {"undo_review": services.latest_undoable(learner=learner, today=today)}
    if card is not None:
        context["leech"] = card.pk in selectors.leech_card_ids(learner=learner, card_ids=[card.pk])
        context["report_form"] = ReportForm(
            initial={"card": card.pk, "exercise": exercise.pk if exercise else None}
        )
    return context
