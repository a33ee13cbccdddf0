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

from cards import services
from cards.models import Deck

STARTER_DECK = "attention-and-transformers"
DEMO_USERS = (
    # username, password env var, development default, staff and superuser
    ("demo", "DEMO_PASSWORD", "demo-pass-123", False),
    ("admin", "ADMIN_PASSWORD", "admin-pass-123", True),
)


class Command(BaseCommand):
    help = (
        "Create (or repair) the learner 'demo' and the superuser 'admin', enrol 'demo' in the "
        "starter deck and print both logins with their API tokens."
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
                changed = []
                if created or not user.check_password(password):
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
                token, _ = Token.objects.get_or_create(user=user)
                state = "created" if created else ("updated" if changed else "unchanged")
                role = "staff, superuser" if privileged else "learner"
                lines.append(
                    f"{username:<6} password {password:<16} token {token.key}  ({role}; {state})"
                )
                if username == "demo":
                    lines.append(self._enrol(user))

        for line in lines:
            self.stdout.write(line)

    def _enrol(self, user) -> str:
        deck = Deck.objects.filter(slug=STARTER_DECK).first()
        if deck is None:
            return (
                f"       not enrolled: deck {STARTER_DECK!r} is missing "
                "(run manage.py load_starter_content first)"
            )
        result = services.enroll(learner=user, deck=deck, at=timezone.now())
        return (
            f"       enrolled in {deck.slug!r}: {result.scheduled} card(s) newly scheduled, "
            f"first due {result.first_due_on}"
        )
