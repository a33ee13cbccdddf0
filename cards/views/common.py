"""What the learner pages share: the learner's study day, service errors on a form."""

from __future__ import annotations

import datetime as dt

from django.core.exceptions import ValidationError
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
