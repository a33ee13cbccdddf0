"""``manage.py send_email_confirmations``: links for the learners reminders skip today."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core import mail
from django.core.management import call_command

from cards.models import LearnerProfile

pytestmark = pytest.mark.django_db


@pytest.fixture
def population(make_user):
    def learner(name, *, email=True, confirmed=False, reminders=True, active=True):
        user = make_user(name)
        user.email = f"{name}@example.org" if email else ""
        user.is_active = active
        user.save()
        LearnerProfile.objects.filter(user=user).update(
            reminders=reminders, confirmed_email=user.email if confirmed else ""
        )
        return user

    learner("waiting")
    learner("confirmed", confirmed=True)
    learner("no-reminders", reminders=False)
    learner("no-address", email=False)
    learner("inactive", active=False)
    changed = learner("changed", confirmed=True)  # confirmed an address, then changed it
    changed.email = "changed-new@example.org"
    changed.save()
    mail.outbox.clear()


def test_only_active_learners_with_reminders_and_an_unconfirmed_address_get_a_link(population):
    out = StringIO()

    call_command("send_email_confirmations", stdout=out)

    assert sorted(m.to[0] for m in mail.outbox) == [
        "changed-new@example.org",
        "waiting@example.org",
    ]
    assert all("/profile/email/confirm/" in m.body for m in mail.outbox)
    assert "Mailed a confirmation link to 2 learners." in out.getvalue()


def test_a_dry_run_counts_and_mails_nobody(population):
    out = StringIO()

    call_command("send_email_confirmations", "--dry-run", stdout=out)

    assert "2 learners would get a confirmation link." in out.getvalue()
    assert mail.outbox == []
