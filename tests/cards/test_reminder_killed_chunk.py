"""A reminder chunk killed mid-burst: its learners are reminded by the next pass.

The chunk's claims carry a lease it renews while it sends; once the chunk is dead
the lease runs out, and the next beat pass (15 minutes on) takes the claims over.
Nothing waits for the broker to redeliver the chunk's message (an hour on Redis).
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.core import mail
from django.core.mail.backends.base import BaseEmailBackend

from cards.models import Reminder
from cards.services import reminders
from cards.tasks import _retry_after, send_reminders_chunk

from .test_reminders import make_learner, utc  # noqa: F401 - the fixture

PASS = utc(2026, 3, 2, 9, 0)  # a beat pass; the learners' reminders are due at 09:00
BEAT = dt.timedelta(minutes=15)
CHUNK_HARD_LIMIT = dt.timedelta(seconds=send_reminders_chunk.time_limit)
SEND = dt.timedelta(seconds=30)  # a slow mail server: each message takes this long


class WorkerKilled(BaseException):
    """What SIGKILL is to the chunk: nothing after it runs (no ``except Exception``)."""


class DyingBackend(BaseEmailBackend):
    """Each send takes ``SEND`` on the chunk's clock; the worker dies at ``dies_at``."""

    now: dt.datetime
    dies_at: dt.datetime
    outbox: list = []

    def send_messages(self, email_messages):
        if type(self).now >= type(self).dies_at:
            raise WorkerKilled()
        type(self).now += SEND
        type(self).outbox.extend(email_messages)
        return len(email_messages)


@pytest.mark.parametrize("starts_after", [dt.timedelta(minutes=1), dt.timedelta(minutes=3)])
def test_a_chunk_killed_at_its_hard_limit_is_finished_by_the_next_pass(
    make_learner,  # noqa: F811 - the fixture
    settings,
    starts_after,
):
    learners = [make_learner() for _ in range(20)]
    settings.EMAIL_BACKEND = f"{__name__}.DyingBackend"
    # The chunk leaves the queue a little after its pass and is killed just before its
    # hard time limit, having renewed its claims' lease as late as it could.
    started = PASS + starts_after
    DyingBackend.now = started
    DyingBackend.dies_at = started + CHUNK_HARD_LIMIT - SEND
    DyingBackend.outbox = []
    with pytest.raises(WorkerKilled):
        reminders.send_reminders_chunk(
            at=started,
            after=0,
            up_to=None,
            retry_after=_retry_after(None),  # the beat task's default
            clock=lambda: DyingBackend.now,
        )
    first = [m.to[0] for m in DyingBackend.outbox]
    assert 0 < len(first) < len(learners)

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    assert reminders.reminder_pass_here(at=PASS + BEAT) == len(learners) - len(first)
    assert sorted(first + [m.to[0] for m in mail.outbox]) == sorted(u.email for u in learners)
    assert not Reminder.objects.filter(sent_at__isnull=True).exists()


def test_the_lease_fits_between_a_live_chunks_renewals_and_the_next_pass(settings):
    retry_after = _retry_after(None)
    # A live chunk renews its lease every quarter of retry_after, between sends that
    # each end within EMAIL_TIMEOUT: it is never old enough to be taken over.
    assert retry_after / 4 + dt.timedelta(seconds=settings.EMAIL_TIMEOUT) < retry_after / 2
    # A chunk dead by its hard limit is past its lease at the next pass whenever it
    # started within 3 minutes of its own pass.
    assert BEAT - CHUNK_HARD_LIMIT - retry_after >= dt.timedelta(minutes=3)
    # The task runs under the limits the lease is measured against, the soft one first.
    assert CHUNK_HARD_LIMIT == reminders.CHUNK_TIME_LIMIT
    soft = dt.timedelta(seconds=send_reminders_chunk.soft_time_limit)
    assert soft == reminders.CHUNK_SOFT_TIME_LIMIT < CHUNK_HARD_LIMIT
