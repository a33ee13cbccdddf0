"""Stamping sent reminders in groups: bounded by count and by time, so a worker killed
outright can resend only the last group, and a slow send is stamped on its own."""

from __future__ import annotations

import datetime as dt
from smtplib import SMTPRecipientsRefused

import pytest
from django.core.mail.backends.base import BaseEmailBackend
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cards.models import Enrollment, LearnerProfile, Reminder, ReviewState
from cards.services import reminders

AT = dt.datetime(2026, 3, 2, 9, 5, tzinfo=dt.UTC)


class FakeClock:
    """The pass's clock; the backend below moves it on by each send's duration."""

    def __init__(self) -> None:
        self.now = AT

    def __call__(self) -> dt.datetime:
        return self.now


class WatchingBackend(BaseEmailBackend):
    """Sends take ``took`` each on ``clock``; before every send it records which of the
    reminders already handed over are still unstamped, and the send times of those."""

    clock = FakeClock()
    took: list[dt.timedelta] = []
    refuse: set[str] = set()
    handed: list[tuple[str, dt.datetime]] = []
    unstamped_before_send: list[list[tuple[str, dt.datetime]]] = []

    def send_messages(self, email_messages):
        cls = type(self)
        stamped = set(
            Reminder.objects.filter(sent_at__isnull=False).values_list("learner__email", flat=True)
        )
        cls.unstamped_before_send.append([(a, t) for a, t in cls.handed if a not in stamped])
        started = cls.clock.now
        cls.clock.now += cls.took[len(cls.unstamped_before_send) - 1]
        [message] = email_messages
        if message.to[0] in cls.refuse:
            raise SMTPRecipientsRefused({message.to[0]: (550, b"no such mailbox")})
        cls.handed.append((message.to[0], started))
        return 1


@pytest.fixture
def learners(db, django_user_model, deck):
    def make(count):
        users = [
            django_user_model.objects.create(username=f"s{i}", email=f"s{i}@example.org")
            for i in range(count)
        ]
        LearnerProfile.objects.filter(user__in=users).update(
            timezone="UTC", day_starts_at=0, reminder_hour=9, reminders=True
        )
        for user in users:
            LearnerProfile.objects.filter(user=user).update(confirmed_email=user.email)
        Enrollment.objects.bulk_create([Enrollment(learner=u, deck=deck) for u in users])
        card = deck.cards.first()
        ReviewState.objects.bulk_create(
            [ReviewState(learner=u, card=card, step=1, due_on=dt.date(2020, 1, 1)) for u in users]
        )
        return users

    return make


@pytest.fixture
def watching(settings):
    settings.EMAIL_BACKEND = f"{__name__}.WatchingBackend"
    settings.STUDY_REMINDER_STAMP_EVERY = 4
    settings.STUDY_REMINDER_STAMP_WITHIN_MS = 50
    WatchingBackend.clock = FakeClock()
    WatchingBackend.refuse = set()
    WatchingBackend.handed = []
    WatchingBackend.unstamped_before_send = []

    def run(took_ms):
        WatchingBackend.took = [dt.timedelta(milliseconds=ms) for ms in took_ms]
        with CaptureQueriesContext(connection) as queries:
            sent = reminders.send_reminders_chunk(
                at=AT, after=0, up_to=None, clock=WatchingBackend.clock
            )
        stamps = [q for q in queries.captured_queries if 'SET "sent_at"' in q["sql"]]
        return sent, len(stamps)

    return run


def test_fast_sends_are_stamped_a_group_of_stamp_every_at_a_time(learners, watching):
    learners(10)

    sent, stamps = watching([1] * 10)

    assert (sent, stamps) == (10, 3)  # 4 + 4 + 2
    assert [len(u) for u in WatchingBackend.unstamped_before_send] == [0, 1, 2, 3] * 2 + [0, 1]
    assert not Reminder.objects.filter(sent_at__isnull=True).exists()


def test_a_send_slower_than_the_window_is_stamped_before_the_next_one(learners, watching):
    learners(5)

    sent, stamps = watching([60] * 5)

    assert (sent, stamps) == (5, 5)
    assert all(not unstamped for unstamped in WatchingBackend.unstamped_before_send)


def test_a_group_closes_once_the_window_has_passed_since_its_first_send(learners, watching):
    learners(8)

    # 20 ms each: the third send ends 60 ms after the group's first began.
    sent, stamps = watching([20] * 8)

    assert (sent, stamps) == (8, 3)  # 3 + 3 + 2
    assert [len(u) for u in WatchingBackend.unstamped_before_send] == [0, 1, 2] * 2 + [0, 1]


def test_a_refused_message_stays_claimed_and_does_not_hold_a_group_open(learners, watching):
    users = learners(6)
    WatchingBackend.refuse = {users[0].email}

    # The refused first send takes 45 ms; the group that follows must time its window
    # from its own first send, not from the refused one.
    sent, stamps = watching([45, 10, 10, 10, 10, 10])

    assert (sent, stamps) == (5, 2)
    # Groups of 4 + 1. Had the refused send opened the window, the second send (ending
    # at 55 ms) would have been stamped alone: lengths 0, 0, 0, 1, 2, 3.
    assert [len(u) for u in WatchingBackend.unstamped_before_send] == [0, 0, 1, 2, 3, 0]
    assert list(
        Reminder.objects.filter(sent_at__isnull=True).values_list("learner", flat=True)
    ) == [users[0].pk]


def test_stamp_every_one_stamps_each_message_alone(learners, watching, settings):
    learners(3)
    settings.STUDY_REMINDER_STAMP_EVERY = 1

    sent, stamps = watching([1] * 3)

    assert (sent, stamps) == (3, 3)
    assert all(not unstamped for unstamped in WatchingBackend.unstamped_before_send)
