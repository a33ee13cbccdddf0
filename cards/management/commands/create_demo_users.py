"""``manage.py create_demo_users``: a learner and an admin for trying the service locally.

Credentials come from DEMO_PASSWORD and ADMIN_PASSWORD; without them the documented
development defaults are used, which the command refuses when DEBUG is off. Running
it again changes nothing unless a password or a flag no longer matches.
"""

from __future__ import annotations

import os

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token

from cards import selectors, services
from cards.models import Deck, ReviewState

STARTER_DECK = "attention-and-transformers"
DEMO_USERS = (
    # username, password env var, development default, staff and superuser
    ("demo", "DEMO_PASSWORD", "demo-pass-123", False),
    ("admin", "ADMIN_PASSWORD", "admin-pass-123", True),
)
# Cards of the starter deck due at once for a newly enrolled demo learner, so a review
# can be tried on day one (enrolling alone schedules the pace's first batch for tomorrow).
DUE_TODAY = 10


class Command(BaseCommand):
    help = (
        "Create (or repair) the learner 'demo' and the superuser 'admin', enrol 'demo' in the "
        "starter deck with its first cards due today, and print both logins with their API "
        "tokens."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--due-today",
            type=int,
            default=DUE_TODAY,
            help=f"Cards due today for a newly enrolled 'demo' (default {DUE_TODAY}).",
        )

    def handle(self, *args, **options):
        accounts = []
        for username, env_name, default, privileged in DEMO_USERS:
            password = os.environ.get(env_name) or default
            if password == default and not settings.DEBUG:
                raise CommandError(
                    f"Refusing to create {username!r} with the development password while "
                    f"DEBUG is off: set {env_name}."
                )
            accounts.append((username, password, privileged))

        User = get_user_model()
        lines = []
        with transaction.atomic():
            for username, password, privileged in accounts:
                user, created = User.objects.get_or_create(
                    username=username,
                    defaults={"is_staff": privileged, "is_superuser": privileged},
                )
                changed = _user_settle(user, password, privileged, reset_password=created)
                token, _ = Token.objects.get_or_create(user=user)
                state = "created" if created else ("updated" if changed else "unchanged")
                role = "staff, superuser" if privileged else "learner"
                lines.append(
                    f"{username:<6} password {password:<16} token {token.key}  ({role}; {state})"
                )
                if username == "demo":
                    lines.append(self._enrol(user, max(options["due_today"], 0)))

        for line in lines:
            self.stdout.write(line)

    def _enrol(self, user, due_today: int) -> str:
        deck = Deck.objects.filter(slug=STARTER_DECK).first()
        if deck is None:
            return (
                f"       not enrolled: deck {STARTER_DECK!r} is missing "
                "(run manage.py load_starter_content first)"
            )
        now = timezone.now()
        result = services.enroll(learner=user, deck=deck, at=now)
        if result.scheduled and due_today:
            # Only on the first enrolment: running the command again never moves progress.
            today = selectors.learner_today(learner=user, at=now)
            first = (
                ReviewState.objects.filter(learner=user, card__deck=deck, step=0)
                .order_by("card__position", "card_id")
                .values_list("pk", flat=True)[:due_today]
            )
            made_due = ReviewState.objects.filter(pk__in=list(first)).update(due_on=today)
            return (
                f"       enrolled in {deck.slug!r}: {result.scheduled} card(s) newly scheduled, "
                f"{made_due} due today ({today}) to try a review now, the rest from "
                f"{result.first_due_on}; {result.waiting} waiting for the pace"
            )
        return (
            f"       enrolled in {deck.slug!r}: {result.scheduled} card(s) newly scheduled, "
            f"first due {result.first_due_on}; {result.waiting} waiting for the pace"
        )


def _user_settle(user, password: str, privileged: bool, *, reset_password: bool) -> list[str]:
    """Give the account its password, flags and activity back; the fields that changed."""
    changed = []
    if reset_password or not user.check_password(password):
        user.set_password(password)
        changed.append("password")
    for flag in ("is_staff", "is_superuser"):
        if getattr(user, flag) != privileged:
            setattr(user, flag, privileged)
            changed.append(flag)
    if not user.is_active:
        user.is_active = True
        changed.append("is_active")
    if changed:
        user.save()
    return changed
