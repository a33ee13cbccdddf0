"""Daily reminders: when they are due, exactly once per learner and study day, and recovery."""

from __future__ import annotations

import datetime as dt
from smtplib import SMTPServerDisconnected
from zoneinfo import ZoneInfo

import pytest
from django.core import mail
from django.core.mail.backends.base import BaseEmailBackend
from django.db import connection
from django.test.utils import CaptureQueriesContext
from prometheus_client import REGISTRY

import cards.admin_beat  # noqa: F401  (registers the Reminder admin)
from cards import due, services, tasks
from cards.models import Enrollment, LearnerProfile, Reminder, ReviewState
from cards.services.reminders import reminder_pass_here

MON = dt.date(2026, 3, 2)
SUN = dt.date(2026, 3, 1)
LONG_AGO = dt.date(2020, 1, 1)


def utc(*args) -> dt.datetime:
    return dt.datetime(*args, tzinfo=dt.UTC)


@pytest.fixture
def make_learner(db, django_user_model, deck):
    counter = iter(range(1, 10_000))

    def make(tz="UTC", day_starts_at=4, reminder_hour=9, *, due=2, email=None, reminders=True):
        n = next(counter)
        user = django_user_model.objects.create(
            username=f"learner{n}", email=f"learner{n}@example.org" if email is None else email
        )
        LearnerProfile.objects.filter(user=user).update(
            timezone=tz,
            day_starts_at=day_starts_at,
            reminder_hour=reminder_hour,
            reminders=reminders,
            confirmed_email=user.email,
        )
        Enrollment.objects.create(learner=user, deck=deck)
        cards = list(deck.cards.order_by("id"))
        ReviewState.objects.bulk_create(
            [
                ReviewState(
                    learner=user,
                    card=card,
                    step=1,
                    due_on=LONG_AGO if i < due else MON + dt.timedelta(days=30),
                )
                for i, card in enumerate(cards)
            ]
        )
        return user

    return make


# --- one pass ------------------------------------------------------------------------------


def test_a_due_learner_gets_one_email_with_the_count_and_the_review_link(make_learner, settings):
    settings.SITE_URL = "https://study.example.org"
    learner = make_learner(due=3)

    assert reminder_pass_here(at=utc(2026, 3, 2, 9, 0)) == 1

    [message] = mail.outbox
    assert message.to == [learner.email]
    assert message.subject == "3 cards due for review today"
    assert "You have 3 cards due for review on Monday 2 March 2026" in message.body
    assert "https://study.example.org/review/" in message.body
    reminder = Reminder.objects.get(learner=learner)
    assert (reminder.study_day, reminder.due_count) == (MON, 3)
    assert reminder.sent_at is not None


def test_a_rerun_the_same_day_sends_nothing_and_the_next_day_sends_again(make_learner):
    learner = make_learner(due=1)

    assert reminder_pass_here(at=utc(2026, 3, 2, 9, 0)) == 1
    assert reminder_pass_here(at=utc(2026, 3, 2, 9, 15)) == 0
    assert reminder_pass_here(at=utc(2026, 3, 3, 3, 45)) == 0
    assert reminder_pass_here(at=utc(2026, 3, 3, 9, 0)) == 1

    assert len(mail.outbox) == 2
    assert list(
        Reminder.objects.filter(learner=learner)
        .order_by("study_day")
        .values_list("study_day", flat=True)
    ) == [MON, dt.date(2026, 3, 3)]


def test_singular_subject(make_learner):
    make_learner(due=1)
    reminder_pass_here(at=utc(2026, 3, 2, 9, 0))
    assert mail.outbox[0].subject == "1 card due for review today"


def test_not_before_the_local_reminder_hour(make_learner):
    make_learner("Europe/Berlin", 4, 18)

    assert reminder_pass_here(at=utc(2026, 3, 2, 16, 59)) == 0  # 17:59 CET
    assert reminder_pass_here(at=utc(2026, 3, 2, 17, 0)) == 1  # 18:00 CET


@pytest.mark.parametrize(
    "why",
    ["reminders off", "no email", "nothing due", "due card inactive", "deck left", "inactive"],
)
def test_who_gets_no_reminder(make_learner, deck, why):
    learner = make_learner(
        due=0 if why == "nothing due" else 1,
        email="" if why == "no email" else None,
        reminders=why != "reminders off",
    )
    due_card = deck.cards.order_by("id").first()
    if why == "due card inactive":
        services.cards_set_active(card_ids=[due_card.pk], active=False)
    if why == "deck left":
        services.unenroll(learner=learner, deck=deck)
    if why == "inactive":
        type(learner).objects.filter(pk=learner.pk).update(is_active=False)

    assert reminder_pass_here(at=utc(2026, 3, 2, 12, 0)) == 0
    assert mail.outbox == []
    assert not Reminder.objects.exists()


def test_due_count_counts_only_active_cards_of_enrolled_decks(make_learner, deck, other_deck):
    learner = make_learner(due=3)
    services.cards_set_active(card_ids=[deck.cards.order_by("id").first().pk], active=False)
    services.enroll(learner=learner, deck=other_deck, at=utc(2026, 2, 1, 12, 0))
    services.unenroll(learner=learner, deck=other_deck)
    ReviewState.objects.filter(card__deck=other_deck).update(due_on=LONG_AGO)
    # a deck the learner left

    reminder_pass_here(at=utc(2026, 3, 2, 9, 0))

    assert Reminder.objects.get(learner=learner).due_count == 2


def test_due_count_leaves_out_suspended_and_buried_cards(make_learner, deck):
    """The e-mail counts what the due queue shows that day: no suspended or buried cards."""
    learner = make_learner(due=4)
    first, second, third, *_ = deck.cards.order_by("id")
    ReviewState.objects.filter(learner=learner, card=first).update(suspended=True)
    ReviewState.objects.filter(learner=learner, card=second).update(buried_on=MON)
    # Buried on an earlier day: back in the queue.
    ReviewState.objects.filter(learner=learner, card=third).update(buried_on=MON - dt.timedelta(1))

    reminder_pass_here(at=utc(2026, 3, 2, 9, 0))

    assert Reminder.objects.get(learner=learner).due_count == 2
    assert due.due_count(learner=learner, today=MON) == 2


def test_only_suspended_or_buried_cards_due_sends_nothing(make_learner, deck):
    learner = make_learner(due=2)
    first, second, *_ = deck.cards.order_by("id")
    ReviewState.objects.filter(learner=learner, card=first).update(suspended=True)
    ReviewState.objects.filter(learner=learner, card=second).update(buried_on=MON)

    assert reminder_pass_here(at=utc(2026, 3, 2, 9, 0)) == 0
    assert not Reminder.objects.exists()


def test_cards_falling_due_today_count_and_tomorrows_do_not(make_learner, deck):
    learner = make_learner(due=0)
    first, second, *_ = deck.cards.order_by("id")
    ReviewState.objects.filter(learner=learner, card=first).update(due_on=MON)
    ReviewState.objects.filter(learner=learner, card=second).update(due_on=MON + dt.timedelta(1))

    reminder_pass_here(at=utc(2026, 3, 2, 9, 0))

    assert Reminder.objects.get(learner=learner).due_count == 1


def test_batches_cover_every_learner_with_statements_per_batch(make_learner, settings):
    settings.STUDY_REMINDER_STAMP_WITHIN_MS = 60_000  # stamps grouped by count alone
    learners = [make_learner() for _ in range(5)]

    with CaptureQueriesContext(connection) as queries:
        assert reminder_pass_here(at=utc(2026, 3, 2, 9, 0), batch_size=2) == 5

    assert sorted(m.to[0] for m in mail.outbox) == sorted(u.email for u in learners)
    claims = [q for q in queries if q["sql"].lstrip().upper().startswith("INSERT")]
    stamps = [q for q in queries if 'SET "sent_at"' in q["sql"]]
    assert len(claims) == 3  # ranges of 2, 2 and the rest
    assert len(stamps) == 3  # one per chunk: fewer than STUDY_REMINDER_STAMP_EVERY each
    # groups, the range bounds in one query, then per chunk: its groups, takeover,
    # claim, user read and stamp
    assert len(queries) == 1 + 1 + 3 * 5


# --- crashes and retries -------------------------------------------------------------------


class RefusingBackend(BaseEmailBackend):
    def send_messages(self, email_messages):
        raise SMTPServerDisconnected("Connection unexpectedly closed")


def test_a_failed_send_stays_claimed_and_is_retried_after_the_delay(make_learner, settings):
    learner = make_learner()
    settings.EMAIL_BACKEND = f"{__name__}.RefusingBackend"

    assert reminder_pass_here(at=utc(2026, 3, 2, 9, 0)) == 0
    claim = Reminder.objects.get(learner=learner)
    assert claim.sent_at is None

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    retry_after = dt.timedelta(minutes=10)
    assert reminder_pass_here(at=utc(2026, 3, 2, 9, 5), retry_after=retry_after) == 0
    assert reminder_pass_here(at=utc(2026, 3, 2, 9, 15), retry_after=retry_after) == 1
    assert reminder_pass_here(at=utc(2026, 3, 2, 9, 30), retry_after=retry_after) == 0
    assert len(mail.outbox) == 1
    assert Reminder.objects.get(learner=learner).sent_at is not None


def test_a_claim_orphaned_by_a_dead_worker_is_sent_once_by_the_next_passes(make_learner):
    learner = make_learner()
    # What a worker killed between claiming and sending leaves behind.
    orphan = Reminder.objects.create(learner=learner, study_day=MON, due_count=2)
    Reminder.objects.filter(pk=orphan.pk).update(created_at=utc(2026, 3, 2, 9, 0))

    assert reminder_pass_here(at=utc(2026, 3, 2, 9, 5)) == 0  # the claim may still be live
    assert reminder_pass_here(at=utc(2026, 3, 2, 9, 15)) == 1
    assert reminder_pass_here(at=utc(2026, 3, 2, 9, 30)) == 0
    assert len(mail.outbox) == 1


def test_an_orphaned_claim_of_a_past_study_day_is_not_sent(make_learner):
    learner = make_learner()
    Reminder.objects.create(learner=learner, study_day=SUN, due_count=2)
    Reminder.objects.filter(learner=learner).update(created_at=utc(2026, 3, 1, 9, 0))

    assert reminder_pass_here(at=utc(2026, 3, 2, 9, 0)) == 1  # Monday's own reminder only

    assert [m.to for m in mail.outbox] == [[learner.email]]
    assert Reminder.objects.get(learner=learner, study_day=SUN).sent_at is None


def test_only_one_of_two_passes_takes_over_an_orphaned_claim(make_learner):
    from cards.services import reminder_claims
    from cards.services.scheduling import groups_table

    learner = make_learner()
    Reminder.objects.create(learner=learner, study_day=MON, due_count=2)
    Reminder.objects.filter(learner=learner).update(created_at=utc(2026, 3, 2, 9, 0))
    at = utc(2026, 3, 2, 9, 30)
    table, params = groups_table(
        reminder_claims.due_groups(at=at), ("tz", "day_start", "hour", "study_day")
    )
    retry_after = dt.timedelta(minutes=10)

    first = reminder_claims.reclaim_stale(
        table=table, table_params=params, at=at, retry_after=retry_after
    )
    second = reminder_claims.reclaim_stale(
        table=table, table_params=params, at=at, retry_after=retry_after
    )

    assert [c.learner_id for c in first] == [learner.id]
    assert second == []


def test_a_pass_skips_a_claim_another_pass_took_over_before_its_send(make_learner):
    from cards.services import reminder_claims, reminders

    learner = make_learner()
    first_lease = utc(2026, 3, 2, 9, 0)
    row = Reminder.objects.create(learner=learner, study_day=MON, due_count=2)
    # A second pass re-stamped the claim: the first pass no longer holds it.
    Reminder.objects.filter(pk=row.pk).update(created_at=utc(2026, 3, 2, 9, 20))
    claim = reminder_claims.ReminderClaim(
        reminder_id=row.pk, learner_id=learner.pk, study_day=MON, due_count=2
    )

    sent = reminders._send_claimed(
        [claim],
        lease=first_lease,
        clock=lambda: utc(2026, 3, 2, 9, 21),
        retry_after=dt.timedelta(minutes=10),
    )

    assert sent == 0
    assert mail.outbox == []
    assert Reminder.objects.get(pk=row.pk).sent_at is None


class TakeoverBackend(BaseEmailBackend):
    """Sends slowly; during the first send another pass takes over the second claim."""

    outbox: list = []

    def send_messages(self, email_messages):
        if not type(self).outbox:
            second = Reminder.objects.order_by("id")[1]
            Reminder.objects.filter(pk=second.pk).update(created_at=utc(2026, 3, 2, 9, 3))
        type(self).outbox.extend(email_messages)
        return len(email_messages)


def test_a_long_batch_renews_its_claims_and_skips_one_taken_over(make_learner, settings):
    from cards.services import reminder_claims, reminders

    learners = [make_learner() for _ in range(3)]
    settings.EMAIL_BACKEND = f"{__name__}.TakeoverBackend"
    TakeoverBackend.outbox = []
    lease = utc(2026, 3, 2, 9, 0)
    rows = [Reminder.objects.create(learner=u, study_day=MON, due_count=2) for u in learners]
    Reminder.objects.filter(pk__in=[r.pk for r in rows]).update(created_at=lease)
    claims = [
        reminder_claims.ReminderClaim(
            reminder_id=r.pk, learner_id=r.learner_id, study_day=MON, due_count=2
        )
        for r in rows
    ]
    # Every reading of the clock is 2 minutes later: sends are slow.
    ticks = iter(lease + dt.timedelta(minutes=2 * i) for i in range(1, 100))

    sent = reminders._send_claimed(
        claims, lease=lease, clock=lambda: next(ticks), retry_after=dt.timedelta(minutes=4)
    )

    assert sent == 2
    assert [m.to for m in TakeoverBackend.outbox] == [[learners[0].email], [learners[2].email]]
    third = Reminder.objects.get(pk=rows[2].pk)
    assert third.sent_at is not None and third.created_at > lease  # renewed before its send
    assert Reminder.objects.get(pk=rows[1].pk).sent_at is None  # the other pass sends it


@pytest.fixture(autouse=True)
def eager_celery():
    """Chunk tasks enqueued by the beat task run in the test process."""
    from studyapp.celery import app

    app.conf.task_always_eager = True
    yield app
    app.conf.task_always_eager = False


def test_the_task_uses_the_clock_and_the_retry_delay_it_is_given(
    make_learner, time_machine, eager_celery
):
    learner = make_learner()
    Reminder.objects.create(learner=learner, study_day=MON, due_count=2)
    Reminder.objects.filter(learner=learner).update(created_at=utc(2026, 3, 2, 9, 0))

    time_machine.move_to(utc(2026, 3, 2, 9, 1), tick=False)
    tasks.send_due_reminders()
    assert Reminder.objects.get(learner=learner).sent_at is None  # the lease still holds
    tasks.send_due_reminders(retry_after_seconds=30)
    assert Reminder.objects.get(learner=learner).sent_at is not None
    assert len(mail.outbox) == 1


def test_beat_fans_the_pass_out_in_chunks_that_send_each_reminder_once(
    make_learner, time_machine, eager_celery, settings
):
    settings.STUDY_REMINDER_CHUNK = 2
    learners = [make_learner() for _ in range(5)]
    time_machine.move_to(utc(2026, 3, 2, 9, 5), tick=False)

    assert tasks.send_due_reminders() == 3  # chunk tasks enqueued (and run, eagerly)
    assert sorted(m.to[0] for m in mail.outbox) == sorted(u.email for u in learners)
    assert tasks.send_due_reminders() == 3
    assert len(mail.outbox) == 5  # the second pass finds every reminder claimed
    assert Reminder.objects.filter(sent_at__isnull=False).count() == 5


def test_beat_enqueues_nothing_before_any_reminder_is_due(make_learner, time_machine):
    make_learner(reminder_hour=9)
    time_machine.move_to(utc(2026, 3, 2, 8, 0), tick=False)
    assert tasks.send_due_reminders() == 0


def test_a_chunk_sends_only_to_its_range_of_learners(make_learner):
    from cards.services import reminders

    learners = [make_learner() for _ in range(4)]
    at = utc(2026, 3, 2, 9, 5)
    sent = reminders.send_reminders_chunk(at=at, after=learners[0].pk, up_to=learners[2].pk)
    assert sent == 2
    assert sorted(m.to[0] for m in mail.outbox) == [learners[1].email, learners[2].email]
    assert reminders.send_reminders_chunk(at=at, after=0, up_to=None) == 2


class SoftLimitBackend(BaseEmailBackend):
    """Delivers the first message, then the task's soft time limit strikes."""

    outbox: list = []

    def send_messages(self, email_messages):
        from celery.exceptions import SoftTimeLimitExceeded

        if type(self).outbox:
            raise SoftTimeLimitExceeded()
        type(self).outbox.extend(email_messages)
        return len(email_messages)


def test_a_chunk_at_its_soft_time_limit_stamps_what_it_sent_and_leaves_the_rest_claimed(
    make_learner, settings, time_machine
):
    settings.EMAIL_BACKEND = f"{__name__}.SoftLimitBackend"
    SoftLimitBackend.outbox = []
    learners = [make_learner() for _ in range(3)]
    time_machine.move_to(utc(2026, 3, 2, 9, 5), tick=False)

    assert tasks.send_reminders_chunk(0, None) == 0  # stopped, not failed

    assert [m.to for m in SoftLimitBackend.outbox] == [[learners[0].email]]
    assert Reminder.objects.get(learner=learners[0]).sent_at is not None
    unsent = Reminder.objects.filter(sent_at__isnull=True)
    assert sorted(unsent.values_list("learner_id", flat=True)) == [u.pk for u in learners[1:]]

    # Another worker takes the chunk over once the claims' lease has run out.
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    time_machine.move_to(utc(2026, 3, 2, 9, 30), tick=False)
    assert tasks.send_reminders_chunk(0, None) == 2
    assert sorted(m.to[0] for m in mail.outbox) == sorted(u.email for u in learners[1:])
    assert not Reminder.objects.filter(sent_at__isnull=True).exists()


class CountingBackend(BaseEmailBackend):
    """Counts connections as SMTP makes them: ``open`` on an open connection is a no-op."""

    opened = 0
    messages = 0
    is_open = False

    def open(self):
        if self.is_open:
            return False
        self.is_open = True
        type(self).opened += 1
        return True

    def close(self):
        self.is_open = False

    def send_messages(self, email_messages):
        type(self).messages += len(email_messages)
        return len(email_messages)


def test_a_chunk_uses_one_connection_compiles_templates_once_and_stamps_in_slices(
    make_learner, settings, monkeypatch
):
    from cards.services import reminders

    settings.EMAIL_BACKEND = f"{__name__}.CountingBackend"
    settings.STUDY_REMINDER_STAMP_EVERY = 4
    settings.STUDY_REMINDER_STAMP_WITHIN_MS = 60_000
    CountingBackend.opened = CountingBackend.messages = 0
    compiled = []
    real_get_template = reminders.get_template
    monkeypatch.setattr(
        reminders, "get_template", lambda name: compiled.append(name) or real_get_template(name)
    )
    for _ in range(10):
        make_learner()

    counted_before = REGISTRY.get_sample_value("study_reminders_sent_total")
    with CaptureQueriesContext(connection) as ctx:
        sent = reminders.send_reminders_chunk(at=utc(2026, 3, 2, 9, 5), after=0, up_to=None)

    assert sent == CountingBackend.messages == 10
    assert CountingBackend.opened == 1
    assert len(compiled) == 2  # subject and body, once for the chunk
    stamps = [q for q in ctx.captured_queries if 'SET "sent_at"' in q["sql"]]
    assert len(stamps) == 3  # 4 + 4 + 2
    assert REGISTRY.get_sample_value("study_reminders_sent_total") == counted_before + 10
    assert Reminder.objects.filter(sent_at__isnull=False).count() == 10


# --- time zones and DST, pass every 15 minutes over 48 hours --------------------------------

LEARNERS = [
    # (time zone, day start, reminder hour)
    ("Etc/GMT+12", 4, 9),  # UTC-12
    ("Pacific/Kiritimati", 4, 9),  # UTC+14
    ("Pacific/Kiritimati", 4, 2),  # reminder before the day start
    ("Asia/Kolkata", 4, 9),  # half-hour offset
    ("UTC", 4, 23),
    ("UTC", 0, 0),
    ("America/New_York", 0, 2),  # 02:00 is skipped in spring
    ("America/New_York", 4, 1),  # 01:00 happens twice in autumn
    ("America/New_York", 4, 3),
    ("Europe/Berlin", 0, 2),  # 02:00 skipped in spring, repeated in autumn
    ("Europe/Berlin", 4, 2),  # before the day start, in the skipped hour
    ("Europe/Berlin", 5, 9),
]

DST_WINDOWS = {
    "new-york-spring-forward": utc(2026, 3, 7, 12, 0),  # 2026-03-08 02:00 -> 03:00
    "berlin-spring-forward": utc(2026, 3, 28, 12, 0),  # 2026-03-29 02:00 -> 03:00
    "berlin-fall-back": utc(2026, 10, 24, 12, 0),  # 2026-10-25 03:00 -> 02:00
    "new-york-fall-back": utc(2026, 10, 31, 12, 0),  # 2026-11-01 02:00 -> 01:00
}


def to_minute(at: dt.datetime) -> dt.datetime:
    # sent_at is the pass's instant plus the milliseconds the pass took.
    return at.replace(second=0, microsecond=0)


def expected_sends(ticks, tz, day_starts_at, hour):
    """Reference: study day -> first tick inside it at or after its reminder instant.

    The instant is local ``hour`` o'clock on the day's own date (or on the next date
    when the hour comes before the day start), a skipped wall time read with the
    offset before the change, i.e. the first instant after the gap.
    """
    zone = ZoneInfo(tz)
    sends = {}
    for tick in ticks:
        day = (
            tick.astimezone(zone).replace(tzinfo=None) - dt.timedelta(hours=day_starts_at)
        ).date()
        date = day + dt.timedelta(days=1 if hour < day_starts_at else 0)
        instant = dt.datetime.combine(date, dt.time(hour), tzinfo=zone)
        if day not in sends and tick >= instant:
            sends[day] = tick
    return sends


@pytest.mark.parametrize("start", DST_WINDOWS.values(), ids=DST_WINDOWS.keys())
def test_every_learner_gets_one_reminder_per_study_day_after_their_local_hour(
    make_learner, time_machine, start, eager_celery
):
    learners = {make_learner(*spec).id: spec for spec in LEARNERS}
    ticks = [start + dt.timedelta(minutes=15 * i) for i in range(48 * 4)]

    for tick in ticks:
        time_machine.move_to(tick, tick=False)
        tasks.send_due_reminders()

    reminders = list(Reminder.objects.all())
    assert all(r.sent_at is not None for r in reminders)
    assert len(mail.outbox) == len(reminders)
    for learner_id, (tz, day_starts_at, hour) in learners.items():
        sent = {r.study_day: to_minute(r.sent_at) for r in reminders if r.learner_id == learner_id}
        expected = expected_sends(ticks, tz, day_starts_at, hour)
        assert sent == expected, (tz, day_starts_at, hour)
        assert len(expected) >= 2  # 48 hours hold at least two reminder instants
        zone = ZoneInfo(tz)
        for day, at in sent.items():
            local = at.astimezone(zone)
            # Sent on the learner's own study day, at or after the hour on the clock.
            assert (local.replace(tzinfo=None) - dt.timedelta(hours=day_starts_at)).date() == day
            expected_date = day + dt.timedelta(days=1 if hour < day_starts_at else 0)
            assert (local.date(), local.hour) >= (expected_date, hour)
    # One e-mail per (learner, study day): the unique claims were each sent once.
    assert len({(r.learner_id, r.study_day) for r in reminders}) == len(reminders)


def test_new_york_spring_forward_sends_at_the_first_pass_after_the_gap(make_learner, time_machine):
    make_learner("America/New_York", 0, 2)
    for minutes in range(0, 6 * 60, 15):  # from local midnight
        time_machine.move_to(utc(2026, 3, 8, 5, 0) + dt.timedelta(minutes=minutes), tick=False)
        tasks.send_due_reminders()

    [reminder] = Reminder.objects.all()
    assert reminder.study_day == dt.date(2026, 3, 8)
    assert to_minute(reminder.sent_at) == utc(
        2026, 3, 8, 7, 0
    )  # 03:00 EDT, the first pass after 01:59 EST


def test_berlin_fall_back_sends_on_the_first_two_oclock_only(make_learner, time_machine):
    make_learner("Europe/Berlin", 0, 2)
    for minutes in range(0, 6 * 60, 15):
        time_machine.move_to(utc(2026, 10, 24, 22, 0) + dt.timedelta(minutes=minutes), tick=False)
        tasks.send_due_reminders()

    [reminder] = Reminder.objects.all()
    assert to_minute(reminder.sent_at) == utc(
        2026, 10, 25, 0, 0
    )  # 02:00 CEST; 02:00 CET sends nothing
    assert len(mail.outbox) == 1


# --- admin -----------------------------------------------------------------------------


@pytest.fixture
def admin_client_for(django_user_model, client):
    admin = django_user_model.objects.create(username="root", is_staff=True, is_superuser=True)
    client.force_login(admin)
    return client


def test_admin_lists_reminders_read_only(make_learner, admin_client_for):
    learner = make_learner()
    other = make_learner()
    reminder_pass_here(at=utc(2026, 3, 2, 9, 0))

    listing = admin_client_for.get("/admin/cards/reminder/", {"q": learner.username})
    assert listing.status_code == 200
    assert learner.username in listing.content.decode()
    assert other.username not in listing.content.decode()
    pending = admin_client_for.get("/admin/cards/reminder/", {"delivery": "pending"})
    assert pending.status_code == 200 and learner.username not in pending.content.decode()

    reminder = Reminder.objects.get(learner=learner)
    assert admin_client_for.get("/admin/cards/reminder/add/").status_code == 403
    delete = admin_client_for.post(f"/admin/cards/reminder/{reminder.pk}/delete/", {"post": "yes"})
    assert delete.status_code == 403
    change = admin_client_for.post(
        f"/admin/cards/reminder/{reminder.pk}/change/", {"due_count": 99}
    )
    assert change.status_code == 403
    assert Reminder.objects.get(pk=reminder.pk).due_count == 2
