"""What the learner pages share: the learner's study day, service errors on a form."""

from __future__ import annotations

import datetime as dt

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied, ValidationError
from django.forms import BaseForm
from django.http import HttpRequest
from django.utils import timezone

from .. import selectors


def study_today(user) -> dt.date:
    """The learner's study day now."""
    return selectors.learner_today(learner=user, at=timezone.now())


def apply_errors(form, exc: ValidationError) -> None:
    """Put a service's per-field ValidationError next to the matching form fields."""
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


def form_problems(form: BaseForm) -> str:
    """A form's errors on one line: ``field: message; other: message``."""
    return "; ".join(
        f"{name}: {' '.join(str(message) for message in errors)}"
        for name, errors in form.errors.items()
    )


def signed_in(request: HttpRequest) -> User:
    """The user of a ``login_required`` view (never anonymous there)."""
    if isinstance(request.user, AnonymousUser):
        raise PermissionDenied
    return request.user
