"""The review session: one due card at a time, and every exercise answered on the site."""

from __future__ import annotations

import datetime as dt

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from exercises import cells
from exercises import services as exercise_services
from exercises import views as exercise_views
from exercises.checking import AnswerError
from exercises.models import Exercise

from .. import due, lapses, selectors, services
from ..forms import ReportForm, ReviewForm
from ..models import Card, ReviewLog
from ..services.review_page import next_reviewable
from .common import form_problems, study_today


def _session_progress(learner, today: dt.date, due_count: int) -> dict:
    done = selectors.review_calendar(learner=learner, start=today, end=today).get(today, 0)
    return {"position": done + 1, "total": done + due_count, "done": done}


@login_required
@require_http_methods(["GET", "POST"])
def review(request: HttpRequest) -> HttpResponse:
    learner = request.user
    if request.method == "POST":
        return _review_post(request)
    today = study_today(learner)
    shown = next_reviewable(learner=learner, today=today)
    state, exercise = shown.state, shown.exercise
    if state is None:
        return render(
            request,
            "cards/review_done.html",
            {
                "today": today,
                "next_due_on": due.next_due_on(learner=learner),
                **controls_context(learner, today),
            },
        )
    count = due.due_count(learner=learner, today=today)
    context = {
        "state": state,
        "card": state.card,
        "today": today,
        "due": count,
        "max_answer_chars": ReviewLog.MAX_ANSWER_TEXT_CHARS,
    }
    context.update(_session_progress(learner, today, count))
    if state.card.kind == Card.Kind.EXERCISE:
        if exercise is None:
            # The card's exercise spec is broken (logged by the service); say so plainly.
            context["exercise_unavailable"] = True
        else:
            # Submitted from here, a prediction brings the learner back to this page.
            submit_url = reverse("exercise-page-submit", args=[exercise.pk]) + "?from=review"
            context.update(exercise_views.exercise_context(exercise, submit_url=submit_url))
    if state.card.kind == Card.Kind.LAB:
        # Reviewed by submitting the lab (cards.services.lab_reviews), on the lab's page.
        context["lab_url"] = f"/labs/{state.card.lab}/"
    context["skipped"] = shown.skipped
    context.update(controls_context(learner, today, state.card, exercise))
    return render(request, "cards/review.html", context)


def _review_post(request: HttpRequest) -> HttpResponse:
    form = ReviewForm(request.POST)
    if not form.is_valid():
        problems = form_problems(form)
        return HttpResponseBadRequest(
            "Expected a card id, a result of 'pass' or 'fail' and an optional written answer "
            f"of at most {ReviewLog.MAX_ANSWER_TEXT_CHARS:,} characters ({problems}).",
            content_type="text/plain",
        )
    try:
        log = services.review_record(
            learner=request.user,
            card=form.cleaned_data["card"],
            result=form.cleaned_data["result"],
            at=timezone.now(),
            answer_text=form.cleaned_data["answer_text"],
        )
    except services.NotDue as exc:
        messages.info(
            request, f"That card was already reviewed; it is next due on {exc.due_on:%a %d %b %Y}."
        )
    except services.NotScheduled:
        messages.warning(request, "That card is not in your review queue any more.")
    except services.LabCardReview:
        messages.warning(request, "Lab cards are reviewed by submitting their lab.")
    except services.ExerciseCardReview:
        messages.warning(request, "Exercise cards are reviewed by submitting their exercise.")
    except services.WrittenAnswerRefused as exc:
        messages.warning(request, str(exc))
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


def _back_to_prediction() -> HttpResponse:
    """Where a prediction made during a review returns: the review page, at the prediction."""
    return redirect(reverse("review") + "#prediction")


@login_required
@require_POST
def exercise_submit(request: HttpRequest, pk: int) -> HttpResponse:
    exercise = exercise_views.owned_exercise(request, pk)
    closed = exercise_services.closed_error(exercise)
    if closed is not None:
        # Closed whatever the cells hold, as the API answers 409 before reading the body.
        messages.warning(request, str(closed))
        return redirect("exercise-page", pk=exercise.pk)
    from_review = request.GET.get("from") == "review"
    answers, typed, problems = cells.parse_answer_cells(exercise.asks, request.POST)
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
            if outcome.attempt is None and from_review:
                # A prediction records no review: the review goes on, the numbers now open.
                return _back_to_prediction()
            return _submitted(request, exercise.pk, outcome.result.get("review"), from_review)
    if from_review and request.POST.get("phase") == "prediction":
        # The prediction is asked inside the review: say there what is missing.
        messages.error(request, _prediction_problem(problems))
        return _back_to_prediction()
    context = exercise_views.exercise_page_context(
        exercise,
        from_review=from_review,
        typed=typed,
        problems=problems,
        invalid=cells.invalid_cells(exercise.asks, request.POST, problems),
    )
    return render(request, "exercises/exercise_detail.html", context, status=400)


def _submitted(request: HttpRequest, pk: int, review: dict | None, from_review: bool):
    """After a checked submission: its exercise page, saying whether it recorded the review."""
    url = reverse("exercise-page", args=[pk])
    if review is not None:
        word = "Good" if review["result"] == "pass" else "Again"
        days = review["interval_days"]
        messages.success(
            request,
            f"Review recorded as {word}: next review in {days} day{'s' if days != 1 else ''}.",
        )
    if review is not None or from_review:
        url += "?from=review"
    return redirect(url)


def _prediction_problem(problems: dict) -> str:
    """A prediction's problems in one sentence, for the review page's messages."""
    return "Your prediction was not recorded: " + " ".join(
        str(message) for messages_ in problems.values() for message in messages_
    )


def controls_context(learner, today: dt.date, card=None, exercise=None) -> dict:
    """What the review page shows beside the card: undo, leech warning, report form."""
    context: dict[str, object] = {
        "undo_review": services.latest_undoable(learner=learner, today=today)
    }
    if card is not None:
        context["leech"] = card.pk in lapses.leech_card_ids(learner=learner, card_ids=[card.pk])
        context["report_form"] = ReportForm(
            initial={"card": card.pk, "exercise": exercise.pk if exercise else None}
        )
    return context
