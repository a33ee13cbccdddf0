"""Signing up, changing and resetting a password."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login, update_session_auth_hash
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from .. import services, tasks
from ..forms import PasswordChangeForm, SignUpForm
from ..services import accounts as account_services
from .common import apply_errors, signed_in


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
            apply_errors(form, exc)
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
def password_change(request: HttpRequest) -> HttpResponse:
    user = signed_in(request)
    form = PasswordChangeForm(user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            account_services.password_change(
                user=user,
                old_password=form.cleaned_data["old_password"],
                new_password=form.cleaned_data["new_password1"],
                request=request,
            )
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            update_session_auth_hash(request, user)
            messages.success(request, "Password changed. Your API token was replaced too.")
            return redirect("profile")
    return render(
        request,
        "registration/password_change_form.html",
        {"form": form},
        status=400 if form.errors else 200,
    )


class PasswordResetView(auth_views.PasswordResetView):
    """Django's reset form; a worker mails the link (built from ``SITE_URL``) after the answer."""

    def form_valid(self, form):
        tasks.enqueue_password_reset_mail(email=form.cleaned_data["email"])
        return HttpResponseRedirect(self.get_success_url())


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    """Django's reset page; a new password also ends a lockout and revokes API tokens."""

    def form_valid(self, form):
        response = super().form_valid(form)
        account_services.password_was_reset(user=form.user)
        return response
