"""Beat fires, a real worker runs the job, and PostgreSQL shows the effect."""

from __future__ import annotations

import datetime as dt
import signal
import time
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from cards import ladder
from cards.models import Card, Deck, Enrollment, LearnerProfile, Reminder, ReviewState
from tests.cards.conftest import reviewed_on_study_day

from .conftest import wait_for
from .mailbox import read_mailbox

pytestmark = [
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]


def make_learners(count: int, *, deck: Deck, due: bool) -> list:
    User = get_user_model()
    users = [
        User.objects.create(username=f"learner{i}", email=f"learner{i}@example.org")
        for i in range(count)
    ]
    # Day starts and reminders at local midnight in UTC: a reminder is due all day long.
    LearnerProfile.objects.filter(user__in=users).update(
        timezone="UTC", day_starts_at=0, reminder_hour=0, reminders=True
    )
    for user in users:  # reminders go only to confirmed addresses
        LearnerProfile.objects.filter(user=user).update(confirmed_email=user.email)
    Enrollment.objects.bulk_create([Enrollment(learner=u, deck=deck) for u in users])
    if due:
        card = deck.cards.first()
        ReviewState.objects.bulk_create(
            [ReviewState(learner=u, card=card, step=0, due_on=dt.date(2020, 1, 1)) for u in users]
        )
    return users


def test_beat_and_worker_place_new_cards(celery_procs):
    deck = Deck.objects.create(slug="attention", title="Attention")
    Card.objects.bulk_create([Card(deck=deck, prompt=f"Card {i}", position=i) for i in range(5)])
    learners = make_learners(3, deck=deck, due=False)
    # The pace places cards for learners who reviewed on their study day.
    for learner in learners:
        reviewed_on_study_day(learner, timezone.now())
    celery_procs.every_second("cards.tasks.schedule_new_cards")
    before = ladder.study_day(timezone.now(), "UTC", 0)

    worker = celery_procs.worker()
    beat = celery_procs.beat()
    wait_for(
        lambda: ReviewState.objects.count() == 15,
        timeout=25,
        what="15 review states placed by the worker",
        procs=[worker, beat],
    )

    after = ladder.study_day(timezone.now(), "UTC", 0)
    tomorrow = {before + dt.timedelta(days=1), after + dt.timedelta(days=1)}
    for learner in learners:
        placed = ReviewState.objects.filter(learner=learner)
        assert placed.count() == 5
        assert set(placed.values_list("step", flat=True)) == {0}
        assert set(placed.values_list("due_on", flat=True)) <= tomorrow


def test_a_worker_killed_mid_batch_loses_no_reminder_and_sends_none_twice(celery_procs):
    deck = Deck.objects.create(slug="attention", title="Attention")
    Card.objects.create(deck=deck, prompt="What does the softmax normalise?")
    learners = make_learners(6, deck=deck, due=True)
    # Short claim lease so the recovery happens within the test.
    celery_procs.every_second("cards.tasks.send_due_reminders", retry_after_seconds=3)
    slow = {"STUDY_TEST_EMAIL_DELAY": "0.6"}

    first = celery_procs.worker(**slow)
    beat = celery_procs.beat()
    wait_for(
        lambda: Reminder.objects.filter(sent_at__isnull=False).count() >= 2,
        timeout=25,
        what="the first reminders of the batch",
        procs=[first, beat],
    )
    celery_procs.kill(first, signal.SIGKILL)  # the whole worker: main process and pool

    sent_before_restart = Reminder.objects.filter(sent_at__isnull=False).count()
    assert sent_before_restart < len(learners), "the kill came too late to interrupt the batch"
    assert Reminder.objects.filter(sent_at__isnull=True).exists()  # claimed, never sent

    second = celery_procs.worker(**slow)
    wait_for(
        lambda: Reminder.objects.filter(sent_at__isnull=False).count() == len(learners),
        timeout=25,
        what="every reminder sent after the restart",
        procs=[second, beat],
    )

    study_day = ladder.study_day(timezone.now(), "UTC", 0)
    assert Reminder.objects.count() == len(learners)
    assert set(Reminder.objects.values_list("study_day", flat=True)) <= {
        study_day,
        study_day - dt.timedelta(days=1),
    }
    recipients = Counter(message["To"] for message in read_mailbox(celery_procs.mail_dir))
    assert recipients == Counter({learner.email: 1 for learner in learners})


def test_a_worker_killed_between_grouped_stamps_resends_at_most_its_unstamped_group(
    celery_procs,
):
    deck = Deck.objects.create(slug="attention", title="Attention")
    Card.objects.create(deck=deck, prompt="What does the softmax normalise?")
    learners = make_learners(40, deck=deck, due=True)
    celery_procs.every_second("cards.tasks.send_due_reminders", retry_after_seconds=3)
    # Sends faster than the time window: the stamps go out in groups of 4.
    grouped = {
        "STUDY_TEST_EMAIL_DELAY": "0.1",
        "STUDY_REMINDER_STAMP_EVERY": "4",
        "STUDY_REMINDER_STAMP_WITHIN_MS": "60000",
    }

    first = celery_procs.worker(**grouped)
    beat = celery_procs.beat()
    wait_for(
        lambda: Reminder.objects.filter(sent_at__isnull=False).count() >= 8,
        timeout=25,
        what="two groups of reminders stamped",
        procs=[first, beat],
    )
    time.sleep(0.25)  # into the next group: some of it sent, none of it stamped
    celery_procs.kill(first, signal.SIGKILL)
    assert Reminder.objects.filter(sent_at__isnull=False).count() < len(learners)

    second = celery_procs.worker(**grouped)
    wait_for(
        lambda: Reminder.objects.filter(sent_at__isnull=False).count() == len(learners),
        timeout=40,
        what="every reminder sent after the restart",
        procs=[second, beat],
    )

    recipients = Counter(message["To"] for message in read_mailbox(celery_procs.mail_dir))
    assert set(recipients) == {learner.email for learner in learners}  # none lost
    assert set(recipients.values()) <= {1, 2}
    resent = [address for address, count in recipients.items() if count == 2]
    assert len(resent) <= 4  # at most the one group the killed worker had not stamped
