"""Study controls beside the card: undo, suspend, bury, card notes and reports."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from studyapp.common.ids import parse_id

from .. import lapses, selectors, services
from ..forms import ReportForm
from ..models import ReviewLog
from .common import form_problems, study_today


def _back(request: HttpRequest, default: str = "review") -> HttpResponse:
    target = request.POST.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(target)
    return redirect(default)


def _card_id(pk: int) -> int:
    if parse_id(pk) is None:
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
        services.card_bury(
            learner=request.user, card_id=_card_id(pk), today=study_today(request.user)
        )
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
            "leech": card.pk in lapses.leech_card_ids(learner=request.user, card_ids=[card.pk]),
            "report_form": ReportForm(initial={"card": card.pk}),
            "written_answers": selectors.written_answers(learner=request.user, card_id=card.pk),
        },
    )


@login_required
@require_POST
def report_create(request: HttpRequest) -> HttpResponse:
    form = ReportForm(request.POST)
    if not form.is_valid():
        problems = form_problems(form)
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
