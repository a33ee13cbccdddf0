"""Learner accounts: registration and the study profile."""

from __future__ import annotations

from zoneinfo import available_timezones

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from rest_framework.authtoken.models import Token

from .. import selectors
from ..models import LearnerProfile

PROFILE_FIELDS = ("timezone", "day_starts_at", "reminders", "reminder_hour")


_TIMEZONES = frozenset(available_timezones())


def timezone_names() -> frozenset[str]:
    return _TIMEZONES


def validate_timezone(name: str) -> None:
    if name not in _TIMEZONES:
        raise ValidationError(
            {
                "timezone": [
                    f"Expected an IANA time zone name such as 'Europe/Berlin', got {name!r}."
                ]
            }
        )


def _validate_hour(field: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 23:
        raise ValidationError({field: [f"Expected a whole hour between 0 and 23, got {value!r}."]})


@transaction.atomic
def register(*, username: str, password: str, email: str = "", timezone: str = "UTC"):
    """Create a learner with a profile and an API token; returns ``(user, token_key)``."""
    User = get_user_model()
    validate_timezone(timezone)
    candidate = User(username=username, email=email)
    try:
        validate_password(password, user=candidate)
    except ValidationError as exc:
        raise ValidationError({"password": exc.messages}) from exc
    if User.objects.filter(username__iexact=username).exists():
        raise ValidationError({"username": ["A user with that username already exists."]})
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=username, password=password, email=email)
    except IntegrityError as exc:
        raise ValidationError({"username": ["A user with that username already exists."]}) from exc
    LearnerProfile.objects.filter(user=user).update(timezone=timezone)
    token = Token.objects.create(user=user)
    return user, token.key


@transaction.atomic
def profile_update(*, user, **fields) -> LearnerProfile:
    """Change the learner's email and study profile; all fields are validated first."""
    unknown = set(fields) - set(PROFILE_FIELDS) - {"email"}
    if unknown:
        raise ValidationError({name: ["Unknown field."] for name in sorted(unknown)})
    if "timezone" in fields:
        validate_timezone(fields["timezone"])
    for field in ("day_starts_at", "reminder_hour"):
        if field in fields:
            _validate_hour(field, fields[field])
    if "reminders" in fields and not isinstance(fields["reminders"], bool):
        raise ValidationError({"reminders": ["Expected true or false."]})
    profile = selectors.learner_profile(user)
    for name in PROFILE_FIELDS:
        if name in fields:
            setattr(profile, name, fields[name])
    profile.full_clean()
    profile.save()
    if "email" in fields:
        user.email = fields["email"]
        user.save(update_fields=["email"])
    return profile
