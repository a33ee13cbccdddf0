"""Learner accounts: registration, the study profile, tokens, passwords and e-mail confirmation."""

from __future__ import annotations

import logging
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.signals import user_logged_in
from django.contrib.auth.tokens import default_token_generator
from django.core import signing
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils.crypto import salted_hmac
from django.utils.encoding import force_str
from django.utils.http import urlsafe_base64_decode
from rest_framework.authtoken.models import Token

from .. import selectors
from ..models import LearnerProfile
from . import privacy
from .profiles import profile_ensure, validate_pace_and_theme

logger = logging.getLogger(__name__)

PROFILE_FIELDS = (
    "timezone",
    "day_starts_at",
    "reminders",
    "reminder_hour",
    "new_cards_per_day",
    "theme",
)
EMAIL_CONFIRM_SALT = "cards.email-confirm"
EMAIL_CONFIRM_MAX_AGE = 3 * 24 * 3600


def _iana_names() -> frozenset[str]:
    """Zone names of the pinned tzdata package, not whatever the host's files hold.

    ``Factory`` (a placeholder zone) and host files such as ``localtime`` or
    ``posixrules`` are not places a learner lives in.
    """
    with resources.files("tzdata").joinpath("zones").open("r") as zones:
        names = {line.strip() for line in zones if line.strip()}
    return frozenset(names - {"Factory", "localtime", "posixrules", "posix", "right"})


_TIMEZONES = _iana_names()


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


def _validate_hour(field: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 23:
        raise ValidationError({field: [f"Expected a whole hour between 0 and 23, got {value!r}."]})


@transaction.atomic
def register(
    *, username: str, password: str, email: str = "", timezone: str = "UTC"
) -> tuple[Any, str]:
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
    if email:
        transaction.on_commit(lambda: email_confirmation_send(user=user))
    return user, token.key


def profile_update(
    *, user: Any, password: str | None = None, request: Any = None, **fields: Any
) -> LearnerProfile:
    """Change the learner's email and study profile; all fields are validated first.

    A new e-mail address needs the current ``password``, checked as a log-in is
    (``password_verify``), and is used for reminders only once confirmed through the
    link sent to it.
    """
    _profile_fields_validate(fields)
    email_changes = "email" in fields and fields["email"] != user.email
    if email_changes:
        if not password:
            raise ValidationError(
                {"password": ["Changing the e-mail address needs your current password."]}
            )
        password_verify(
            user=user,
            password=password,
            request=request,
            field="password",
            message="This is not your current password; the e-mail address is unchanged.",
        )
    return _profile_save(user=user, email_changes=email_changes, fields=fields)


@transaction.atomic
def _profile_save(*, user: Any, email_changes: bool, fields: dict[str, Any]) -> LearnerProfile:
    profile = profile_ensure(user)
    changed = [name for name in PROFILE_FIELDS if name in fields]
    for name in changed:
        setattr(profile, name, fields[name])
    profile.full_clean()
    if changed:
        # Only these columns: a confirmation that lands meanwhile is not written over.
        profile.save(update_fields=changed)
    if email_changes:
        user.email = fields["email"]
        user.save(update_fields=["email"])
        if user.email:
            transaction.on_commit(lambda: email_confirmation_send(user=user))
    return profile


def _profile_fields_validate(fields: dict[str, Any]) -> None:
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
    validate_pace_and_theme(fields)


# --- Tokens and passwords ------------------------------------------------------------


def token_for_login(*, user: Any, request: Any = None) -> str:
    """The learner's API token, created on the first log-in after a log-out or rotation.

    Sends ``user_logged_in`` as a session log-in does: ``last_login`` moves and the
    failed log-ins counted towards a lockout are cleared.
    """
    token, _ = Token.objects.get_or_create(user=user)
    if request is not None:
        user_logged_in.send(sender=user.__class__, request=request, user=user)
    return str(token.key)


@transaction.atomic
def token_rotate(*, user: Any) -> str:
    """Replace the learner's API token: the old one stops working at once."""
    Token.objects.filter(user=user).delete()
    return str(Token.objects.create(user=user).key)


def token_delete(*, key: str) -> None:
    Token.objects.filter(key=key).delete()


def _set_password(user: Any, new_password: str, *, field: str) -> None:
    try:
        validate_password(new_password, user=user)
    except ValidationError as exc:
        raise ValidationError({field: exc.messages}) from exc
    user.set_password(new_password)
    user.save(update_fields=["password"])
    _unlock(user.get_username())


def _unlock(username: str) -> None:
    # A new password is the way back from a lockout.
    from axes.utils import reset

    reset(username=username)


def password_verify(*, user: Any, password: str, request: Any, field: str, message: str) -> None:
    """Check the learner's current password as a log-in checks it.

    A wrong password counts toward the username's lockout (django-axes, the same
    count as the web log-in and ``auth/token/``), and while the username is locked the
    right one is refused too: ``request`` (the plain ``HttpRequest``) is then flagged
    and the lockout middleware answers 429 with ``Retry-After``. Raises
    ``ValidationError`` on ``field`` otherwise.

    Call it outside a transaction: the failure it records must outlive the rollback
    of the error raised here.
    """
    checked = authenticate(request, username=user.get_username(), password=password)
    if checked is None or checked.pk != user.pk:
        raise ValidationError({field: [message]})


def password_change(*, user: Any, old_password: str, new_password: str, request: Any) -> str:
    """Set a new password after checking the old one; returns the new API token."""
    password_verify(
        user=user,
        password=old_password,
        request=request,
        field="old_password",
        message="This is not your current password.",
    )
    return _password_replace(user=user, new_password=new_password)


@transaction.atomic
def _password_replace(*, user: Any, new_password: str) -> str:
    _set_password(user, new_password, field="new_password")
    logger.info("Password changed for user %s", user.pk)
    return token_rotate(user=user)


def account_delete(*, user: Any, password: str, request: Any) -> None:
    """Delete the account (``privacy.account_delete``) once its password is confirmed."""
    password_verify(
        user=user,
        password=password,
        request=request,
        field="password",
        message="This is not your current password; the account is not deleted.",
    )
    privacy.account_delete(user=user)


def password_reset_user(*, uid: str, token: str) -> Any:
    """The user a reset link (``uid``, ``token``) belongs to, or ValidationError."""
    User = get_user_model()
    try:
        user = User.objects.get(pk=force_str(urlsafe_base64_decode(uid)))
    except (TypeError, ValueError, OverflowError, User.DoesNotExist):
        user = None
    if user is None or not default_token_generator.check_token(user, token):
        raise ValidationError(
            {"token": ["This reset link is invalid, expired or already used; ask for a new one."]}
        )
    return user


def password_was_reset(*, user: Any) -> None:
    """After Django's own reset page set the password: revoke tokens, end a lockout."""
    Token.objects.filter(user=user).delete()
    _unlock(user.get_username())
    logger.info("Password reset for user %s", user.pk)


@transaction.atomic
def password_reset_confirm(*, uid: str, token: str, new_password: str) -> None:
    """Set the password from a reset link; every API token of the account stops working."""
    user = password_reset_user(uid=uid, token=token)
    _set_password(user, new_password, field="new_password")
    Token.objects.filter(user=user).delete()
    logger.info("Password reset for user %s", user.pk)


def password_reset_mail_send(*, email: str) -> int:
    """Mail a one-time reset link to every active account with this address.

    Runs in a worker (``cards.tasks.send_password_reset_mail``), never in the request that asked for it,
    so a known and an unknown address take the same time there. The link is built
    from ``SITE_URL``, never from a request's Host. Returns the number of mails sent.
    """
    from django.contrib.auth.forms import PasswordResetForm

    form = PasswordResetForm(data={"email": email})
    if not form.is_valid():
        return 0
    site = urlsplit(settings.SITE_URL)
    users = list(form.get_users(form.cleaned_data["email"]))
    form.save(
        domain_override=site.netloc,
        use_https=site.scheme == "https",
        subject_template_name="registration/password_reset_subject.txt",
        email_template_name="registration/password_reset_email.txt",
        extra_email_context={"site_url": settings.SITE_URL},
    )
    return len(users)


# --- E-mail confirmation -----------------------------------------------------------


def email_confirmation_token(*, user: Any) -> str:
    """A signed link token for ``user.email``, good for one confirmation.

    It carries a digest of the address confirmed when it was made ("c"): confirming
    changes that address, so the same link (and every other link made before it)
    confirms nothing afterwards.
    """
    confirmed = selectors.learner_profile(user).confirmed_email
    return signing.dumps(
        {"u": user.pk, "e": user.email, "c": _confirmed_digest(confirmed)}, salt=EMAIL_CONFIRM_SALT
    )


def _confirmed_digest(confirmed_email: str) -> str:
    # The token is signed, not encrypted: it names no address but the one it confirms.
    return salted_hmac(EMAIL_CONFIRM_SALT, confirmed_email).hexdigest()[:16]


class EmailLinkUsed(ValidationError):
    """The confirmation link was used already (or a newer one confirmed an address since)."""


def email_confirmation_send(*, user: Any) -> None:
    """Mail the link that confirms ``user.email``; a mail server that fails is logged."""
    if not user.email:
        return
    link = settings.SITE_URL + reverse("email-confirm", args=[email_confirmation_token(user=user)])
    try:
        send_mail(
            "Confirm your e-mail address for reminders",
            (
                f"Hello {user.get_username()},\n\nOpen this link within three days to "
                f"receive study reminders at this address:\n\n{link}\n\nIf you did not "
                "ask for this, ignore this message.\n"
            ),
            settings.DEFAULT_FROM_EMAIL,
            [user.email],
        )
    except Exception as exc:
        logger.warning("Could not send the e-mail confirmation to user %s: %s", user.pk, exc)


class EmailAlreadyConfirmed(Exception):
    """The learner's address is confirmed already: no link is sent."""


def email_confirmation_request(*, user: Any) -> str:
    """Mail a fresh confirmation link for the learner's address; returns the address.

    ``ValidationError`` on ``email`` when the account has none, ``EmailAlreadyConfirmed``
    when the address is confirmed already (nothing is sent either way).
    """
    if not user.email:
        raise ValidationError({"email": ["Add an e-mail address first (PATCH me/)."]})
    if selectors.learner_profile(user).email_confirmed:
        raise EmailAlreadyConfirmed(f"{user.email} is confirmed already.")
    email_confirmation_send(user=user)
    return str(user.email)


@transaction.atomic
def email_confirm(*, token: str) -> Any:
    """Confirm the address a link was sent to, if it is still the learner's address.

    A link works once: ``EmailLinkUsed`` when it was used already, or when another
    link confirmed an address after this one was sent.
    """
    try:
        data = signing.loads(token, salt=EMAIL_CONFIRM_SALT, max_age=EMAIL_CONFIRM_MAX_AGE)
    except signing.BadSignature as exc:
        raise ValidationError("This confirmation link is invalid or has expired.") from exc
    user = get_user_model().objects.filter(pk=data.get("u"), is_active=True).first()
    if user is None or not user.email or user.email != data.get("e"):
        raise ValidationError("This link is for an address that is no longer on the account.")
    # Locked: two uses of one link at once confirm once.
    profile = LearnerProfile.objects.select_for_update().get(user=user)
    if data.get("c", _confirmed_digest("")) != _confirmed_digest(profile.confirmed_email):
        if profile.confirmed_email == user.email:
            raise EmailLinkUsed(f"This link was already used: {user.email} is confirmed.")
        raise EmailLinkUsed(
            "This link was already used, or a newer link confirmed an address since; "
            "ask for a new one."
        )
    LearnerProfile.objects.filter(user=user).update(confirmed_email=user.email)
    return user
