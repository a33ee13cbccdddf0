"""A learner's data: the export of everything held about them, and account deletion.

The export is one JSON document with one section per source. A new table that
holds a learner's data adds a section to ``EXPORT_SECTIONS``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib.auth import SESSION_KEY, get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from labs.models import Submission

from .. import selectors
from ..models import Enrollment, Reminder, Report, ReviewLog, ReviewState
from . import review_days

logger = logging.getLogger(__name__)

# The review log outlives deleted accounts for the staff's card statistics, held by
# one inactive account that cannot log in and cannot be registered (the space).
DELETED_LEARNERS_USERNAME = "(deleted learners)"


def _profile(user: Any) -> dict[str, Any]:
    profile = selectors.learner_profile(user)
    return {
        "username": user.get_username(),
        "email": user.email,
        "confirmed_email": profile.confirmed_email,
        "date_joined": user.date_joined,
        "last_login": user.last_login,
        "timezone": profile.timezone,
        "day_starts_at": profile.day_starts_at,
        "reminders": profile.reminders,
        "reminder_hour": profile.reminder_hour,
    }


def _enrollments(user: Any) -> list[Mapping[str, Any]]:
    rows = Enrollment.objects.filter(learner=user).order_by("created_at", "id")
    return [
        {"deck": row["deck__slug"], "enrolled_at": row["created_at"]}
        for row in rows.values("deck__slug", "created_at")
    ]


def _states(user: Any) -> list[Mapping[str, Any]]:
    rows = ReviewState.objects.filter(learner=user).order_by("card_id")
    return list(rows.values("card_id", "step", "due_on", "last_reviewed_at"))


def _reviews(user: Any) -> list[Mapping[str, Any]]:
    rows = ReviewLog.objects.filter(learner=user).order_by("reviewed_at", "id")
    return list(
        rows.values(
            "id",
            "card_id",
            "reviewed_at",
            "study_day",
            "result",
            "step_before",
            "step_after",
            "interval_days",
            "due_before",
            "due_after",
            "answer_text",
        )
    )


def _exercises(user: Any) -> list[dict[str, Any]]:
    from exercises.models import Attempt, Exercise

    exercises: list[dict[str, Any]] = [
        dict(row)
        for row in Exercise.objects.filter(owner=user)
        .order_by("created_at", "id")
        .values(
            "id",
            "kind",
            "params",
            "inputs",
            "asks",
            "attempts_used",
            "max_attempts",
            "solved",
            "created_at",
        )
    ]
    attempts: defaultdict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in (
        Attempt.objects.filter(exercise__owner=user)
        .order_by("exercise_id", "number")
        .values("exercise_id", "number", "answers", "correct", "score", "created_at")
    ):
        attempt: dict[str, Any] = dict(row)
        attempts[attempt.pop("exercise_id")].append(attempt)
    for exercise in exercises:
        exercise["attempts"] = attempts.get(exercise["id"], [])
    return exercises


def _predictions(user: Any) -> list[Mapping[str, Any]]:
    from exercises.models import Prediction

    rows = Prediction.objects.filter(owner=user).order_by("created_at", "id")
    return list(
        rows.values("id", "exercise_id", "ask", "answer", "expected", "correct", "created_at")
    )


def _reminders(user: Any) -> list[Mapping[str, Any]]:
    rows = Reminder.objects.filter(learner=user).order_by("study_day")
    return list(rows.values("study_day", "due_count", "sent_at"))


def _reports(user: Any) -> list[Mapping[str, Any]]:
    return list(Report.objects.filter(learner=user).order_by("pk").values())


def _lab_submissions(user: Any) -> list[Mapping[str, Any]]:
    rows = Submission.objects.filter(learner=user).order_by("pk")
    return list(
        rows.values(
            "id",
            "lab",
            "code",
            "status",
            "passed",
            "tests",
            "diagnosis",
            "output",
            "duration_ms",
            "created_at",
            "finished_at",
        )
    )


EXPORT_SECTIONS: dict[str, Callable[[Any], object]] = {
    "profile": _profile,
    "enrollments": _enrollments,
    "states": _states,
    "reviews": _reviews,
    "exercises": _exercises,
    "predictions": _predictions,
    "reports": _reports,
    "reminders": _reminders,
    "lab_submissions": _lab_submissions,
}


def account_export(*, user: Any) -> dict[str, Any]:
    """Everything the service holds about ``user``, one section per source."""
    document: dict[str, Any] = {"exported_at": timezone.now()}
    with transaction.atomic():  # one consistent snapshot on PostgreSQL
        for name, section in EXPORT_SECTIONS.items():
            document[name] = section(user)
    return document


def _deleted_learners() -> Any:
    User = get_user_model()
    holder, created = User.objects.get_or_create(
        username=DELETED_LEARNERS_USERNAME, defaults={"is_active": False}
    )
    if created:
        holder.set_unusable_password()
        holder.save(update_fields=["password"])
    return holder


@transaction.atomic
def account_delete(*, user: Any) -> None:
    """Delete the learner and their personal data.

    The review log stays for the staff's card statistics, moved to an account that
    stands for all deleted learners and stripped of idempotency keys and written
    answers, so nothing in it points back to the person. Everything else of theirs is deleted. A learner's
    own deletion confirms the password first (``accounts.account_delete``).
    """
    if user.get_username() == DELETED_LEARNERS_USERNAME:
        raise ValidationError({"detail": ["This account holds deleted learners' reviews."]})
    holder = _deleted_learners()
    moved = ReviewLog.objects.filter(learner=user).update(
        learner=holder, idempotency_key="", answer_text=""
    )
    # The per-day counts follow the log; the learner's own rows go with the account.
    review_days.review_days_merge(from_learner_id=user.pk, into_learner_id=holder.pk)
    _forget_log_ins(user)
    _forget_sessions(user)
    user_id = user.pk
    user.delete()
    logger.info("Account %s deleted; %s reviews kept without a link to it", user_id, moved)


def _forget_log_ins(user: Any) -> None:
    """django-axes' rows for the username in any case (log-in matches it so), but not
    those of another account whose username differs only in case."""
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog

    username = user.get_username()
    others = (
        get_user_model()
        .objects.filter(username__iexact=username)
        .exclude(pk=user.pk)
        .values_list("username", flat=True)
    )
    for model in (AccessAttempt, AccessLog, AccessFailureLog):
        model.objects.filter(username__iexact=username).exclude(username__in=others).delete()


def _forget_sessions(user: Any) -> None:
    """The learner's sessions in every browser, from the session table.

    A session row names its user only inside its signed data, so every row is
    decoded: the cost grows with the table (tens of µs a row), paid once per
    deletion. Session engines without a table keep nothing to delete here.
    """
    store_class = import_module(settings.SESSION_ENGINE).SessionStore
    if not hasattr(store_class, "get_model_class"):
        return
    user_id = str(user.pk)
    decoder = store_class()
    rows = store_class.get_model_class().objects.only("session_key", "session_data")
    keys = [
        row.session_key
        for row in rows.iterator(chunk_size=2000)
        if str(decoder.decode(row.session_data).get(SESSION_KEY)) == user_id
    ]
    for key in keys:
        store_class(session_key=key).delete()  # the cached_db engine forgets its cache too
