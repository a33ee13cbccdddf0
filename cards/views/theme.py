"""The header's theme switch: a form that saves ``LearnerProfile.theme`` and comes back."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from .. import services
from ..models import LearnerProfile


@login_required
@require_POST
def theme_set(request: HttpRequest) -> HttpResponse:
    theme = request.POST.get("theme", "")
    if theme not in LearnerProfile.Theme.values:
        expected = ", ".join(LearnerProfile.Theme.values)
        return HttpResponseBadRequest(
            f"theme: expected one of {expected}; got {theme[:40]!r}.", content_type="text/plain"
        )
    services.profile_update(user=request.user, request=request, theme=theme)
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ) or not back.startswith("/"):
        back = "profile"
    return redirect(back)
