"""The profile page and the account lifecycle: e-mail confirmation, export, deletion, pause."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from .. import due, ladder, selectors, services
from ..forms import AccountDeleteForm, PauseForm, ProfileForm
from ..models import LearnerProfile
from ..services import accounts as account_services
from ..services import privacy
from .common import apply_errors, form_problems, signed_in, study_today


@login_required
@require_http_methods(["GET", "POST"])
def profile(request: HttpRequest) -> HttpResponse:
    current = selectors.learner_profile(request.user)
    form = ProfileForm(request.POST or None, initial=_profile_initial(request.user, current))
    if request.method == "POST" and form.is_valid():
        try:
            services.profile_update(user=request.user, request=request, **form.cleaned_data)
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, "Profile saved.")
            return redirect("profile")
    today = study_today(request.user)
    return render(
        request,
        "cards/profile.html",
        {
            "form": form,
            "today": today,
            **_account_context(request.user, current),
            # Study controls: the pause and the learner's reports.
            "pause_form": PauseForm(initial={"start": today, "days": 7}),
            "pause_end": ladder.pause_end(current.pause_start, current.pause_days),
            "paused_now": due.is_paused(learner=request.user, today=today),
            "reports": selectors.reports_of(learner=request.user).select_related("card")[:20],
        },
        status=400 if form.errors else 200,
    )


def _profile_initial(user, profile: LearnerProfile) -> dict[str, object]:
    return {
        "email": user.email,
        "timezone": profile.timezone,
        "day_starts_at": profile.day_starts_at,
        "reminders": profile.reminders,
        "reminder_hour": profile.reminder_hour,
        "new_cards_per_day": profile.new_cards_per_day,
        "theme": profile.theme,
    }


def _account_context(user, profile: LearnerProfile) -> dict[str, object]:
    return {
        "email_confirmed": profile.email_confirmed,
        "reminders_unconfirmed": profile.reminders and not profile.email_confirmed,
        "delete_form": AccountDeleteForm(prefix="delete"),
    }


def email_confirm(request: HttpRequest, token: str) -> HttpResponse:
    try:
        user = account_services.email_confirm(token=token)
    except ValidationError as exc:
        used = isinstance(exc, account_services.EmailLinkUsed)
        return render(
            request,
            "registration/email_confirm.html",
            {"error": exc.messages[0], "used": used},
            status=400,
        )
    return render(request, "registration/email_confirm.html", {"confirmed": user.email})


@login_required
@require_POST
def email_confirm_send(request: HttpRequest) -> HttpResponse:
    user = signed_in(request)
    try:
        address = account_services.email_confirmation_request(user=user)
    except ValidationError:
        messages.warning(request, "Add an e-mail address first.")
    except account_services.EmailAlreadyConfirmed as exc:
        messages.info(request, str(exc))
    else:
        messages.success(request, f"A confirmation link is on its way to {address}.")
    return redirect("profile")


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
            account_services.account_delete(
                user=request.user, password=form.cleaned_data["password"], request=request
            )
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            logout(request)
            messages.success(request, "Your account and its personal data were deleted.")
            return redirect("login")
    current = selectors.learner_profile(request.user)
    context = {
        "form": ProfileForm(initial=_profile_initial(request.user, current)),
        "today": study_today(request.user),
        **_account_context(request.user, current),
        "delete_form": form,
    }
    return render(request, "cards/profile.html", context, status=400)


@login_required
@require_POST
def pause_set(request: HttpRequest) -> HttpResponse:
    today = study_today(request.user)
    if request.POST.get("action") == "end":
        try:
            _start, used = services.pause_finish(learner=request.user, today=today)
        except services.PauseRefused as exc:
            messages.warning(request, str(exc))
        else:
            messages.success(request, f"Pause ended after {used} day{'s' if used != 1 else ''}.")
        return redirect("profile")
    form = PauseForm(request.POST)
    if form.is_valid() and form.cleaned_data["start"] < today:
        form.add_error("start", f"Expected today ({today:%d %b %Y}) or a later date.")
    if not form.is_valid():
        problems = form_problems(form)
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
