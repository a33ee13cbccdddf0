"""The learner's study profile as a row: made with the account, or on the first write;
and the checks of its pace and theme."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from .. import selectors
from ..models import MAX_NEW_CARDS_PER_DAY, LearnerProfile


def profile_ensure(user: Any) -> LearnerProfile:
    """The learner's saved profile, made now for a user created without one.

    Accounts get theirs when they are made (``cards.signals``); this serves the writes
    that need the row (a profile change, a pause) for users made around that.
    """
    profile = selectors.learner_profile(user)
    if profile.pk is None:
        profile, _ = LearnerProfile.objects.get_or_create(user=user)
    return profile


def validate_pace_and_theme(fields: dict[str, Any]) -> None:
    """Refuse a pace outside 0..MAX_NEW_CARDS_PER_DAY or a theme not offered, naming the field."""
    if "new_cards_per_day" in fields:
        value = fields["new_cards_per_day"]
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not 0 <= value <= MAX_NEW_CARDS_PER_DAY
        ):
            raise ValidationError(
                {
                    "new_cards_per_day": [
                        f"Expected a whole number from 0 to {MAX_NEW_CARDS_PER_DAY}; got {value!r}."
                    ]
                }
            )
    if "theme" in fields and fields["theme"] not in LearnerProfile.Theme.values:
        expected = ", ".join(LearnerProfile.Theme.values)
        raise ValidationError({"theme": [f"Expected one of {expected}; got {fields['theme']!r}."]})
