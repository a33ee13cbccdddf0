"""The learner's study profile as a row: made with the account, or on the first write."""

from __future__ import annotations

from typing import Any

from .. import selectors
from ..models import LearnerProfile


def profile_ensure(user: Any) -> LearnerProfile:
    """The learner's saved profile, made now for a user created without one.

    Accounts get theirs when they are made (``cards.signals``); this serves the writes
    that need the row (a profile change, a pause) for users made around that.
    """
    profile = selectors.learner_profile(user)
    if profile.pk is None:
        profile, _ = LearnerProfile.objects.get_or_create(user=user)
    return profile
