"""The beat jobs as an operator meets them: odd profiles, chunk edges, mail failures, retries."""

from __future__ import annotations

import datetime as dt
import smtplib

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.core import mail
from django.core.mail.backends.base import BaseEmailBackend

from cards import due
from cards.models import (
    Card,
    Deck,
    Enrollment,
    IdempotencyKey,
    LearnerProfile,
    Reminder,
    ReviewState,
)
from cards.services.housekeeping import housekeeping
from cards.services.reminders import reminder_pass_here
from cards.services.scheduling import schedule_new_cards
from exercises.models import Exercise

from .conftest import reviewed_on_study_day

MON = dt.date(2026, 3, 2)
LONG_AGO = dt.date(2020, 1, 1)
AT = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)  # Monday noon UTC
REMIND_AT = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)
RETRY_AFTER = dt.timedelta(minutes=10)


@pytest.fixture
def make_learner(db, django_user_model):
    counter = iter(range(1, 10_000))

    def make(tz="UTC", day_starts_at=4, *, decks=(), email=True, reviewed=False):
        n = next(counter)
        user = django_user_model.objects.create(
            username=f"learner{n}", email=f"learner{n}@example.org" if email else ""
        )
        LearnerProfile.objects.filter(user=user).update(
            timezone=tz, day_starts_at=day_starts_at, reminder_hour=9, confirmed_email=user.email
        )
        for deck in decks:
            Enrollment.objects.create(learner=user, deck=deck)
        if reviewed:
            reviewed_on_study_day(user, AT)
        return user

    return make


def placed(user) -> dict[int, tuple[int, dt.date]]:
    return {s.card_id: (s.step, s.due_on) for s in ReviewState.objects.filter(learner=user)}


def make_due(user, deck, n):
    """``n`` of the deck's cards long overdue for ``user``, the rest due in a month."""
    ReviewState.objects.bulk_create(
        [
            ReviewState(
                learner=user,
                card=card,
                step=1,
                due_on=LONG_AGO if i < n else MON + dt.timedelta(days=30),
            )
            for i, card in enumerate(deck.cards.order_by("id"))
        ]
    )


# --- placing new cards -----------------------------------------------------------------------


def test_a_time_zone_name_naming_a_folder_counts_as_utc_and_stops_nobody(deck, make_learner):
    # "America" passes a free-text admin field; the zone database finds a folder there.
    odd = make_learner("America", 4, decks=[deck], reviewed=True)
    berlin = make_learner("Europe/Berlin", 4, decks=[deck], reviewed=True)

    assert schedule_new_cards(at=AT) == 8

    assert {due for _, due in placed(odd).values()} == {dt.date(2026, 3, 3)}
    assert {due for _, due in placed(berlin).values()} == {dt.date(2026, 3, 3)}


def test_reminders_go_out_despite_a_time_zone_naming_a_folder(deck, make_learner):
    odd = make_learner("America", 4, decks=[deck])
    other = make_learner("UTC", 4, decks=[deck])
    make_due(odd, deck, 1)
    make_due(other, deck, 1)

    assert reminder_pass_here(at=REMIND_AT) == 2


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 4, 6, 7])
def test_every_learner_at_every_chunk_edge_is_placed_exactly_once(make_learner, chunk_size):
    # Two decks per learner: enrolment rows repeat learner ids across a chunk edge.
    decks = [Deck.objects.create(slug=f"d{i}", title=f"D{i}") for i in range(2)]
    Card.objects.bulk_create(
        [Card(deck=d, prompt=f"{d.slug}-{i}", position=i) for d in decks for i in range(2)]
    )
    learners = [make_learner(decks=decks, reviewed=True) for _ in range(6)]
    # A gap in the ids, and a learner enrolled in one deck only.
    type(learners[0]).objects.filter(pk=learners[2].pk).delete()
    single = make_learner(decks=decks[:1], reviewed=True)

    assert schedule_new_cards(at=AT, chunk_size=chunk_size) == 5 * 4 + 2
    assert schedule_new_cards(at=AT, chunk_size=chunk_size) == 0

    for learner in learners[:2] + learners[3:]:
        assert len(placed(learner)) == 4
    assert len(placed(single)) == 2


def test_cards_of_a_deck_the_learner_left_are_not_placed(deck, other_deck, make_learner):
    learner = make_learner(decks=[deck, other_deck], reviewed=True)
    Enrollment.objects.filter(learner=learner, deck=other_deck).delete()

    schedule_new_cards(at=AT)

    assert set(placed(learner)) == set(deck.cards.values_list("id", flat=True))


# --- reminders: what a failed send leaves behind ----------------------------------------------


class RefusingBackend(BaseEmailBackend):
    attempts = 0

    def send_messages(self, email_messages):
        type(self).attempts += 1
        raise smtplib.SMTPServerDisconnected("Connection unexpectedly closed")


class SoftLimitBackend(BaseEmailBackend):
    def send_messages(self, email_messages):
        raise SoftTimeLimitExceeded()


class OneMessagePerConnectionSMTP:
    """An SMTP server that drops the connection when a second message comes on it."""

    delivered: list[str] = []
    opened = 0

    def __init__(self, host, port, **kwargs):
        type(self).opened += 1
        self.messages = 0
        self.alive = True

    def sendmail(self, from_addr, to_addrs, msg):
        if not self.alive:
            raise smtplib.SMTPServerDisconnected("please run connect() first")
        self.messages += 1
        if self.messages > 1:
            self.alive = False
            raise smtplib.SMTPServerDisconnected("Connection unexpectedly closed")
        type(self).delivered.extend(to_addrs)
        return {}

    def quit(self):
        if not self.alive:
            raise smtplib.SMTPServerDisconnected("please run connect() first")

    def close(self):
        self.alive = False


def test_a_retried_reminder_gives_the_count_due_at_the_retry(deck, make_learner, settings):
    learner = make_learner(decks=[deck])
    make_due(learner, deck, 3)
    settings.EMAIL_BACKEND = f"{__name__}.RefusingBackend"
    assert reminder_pass_here(at=REMIND_AT, retry_after=RETRY_AFTER) == 0

    # Meanwhile the learner reviews two of the three cards.
    first_two = list(deck.cards.order_by("id").values_list("id", flat=True)[:2])
    ReviewState.objects.filter(learner=learner, card_id__in=first_two).update(
        due_on=MON + dt.timedelta(days=3)
    )
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    assert reminder_pass_here(at=REMIND_AT + dt.timedelta(minutes=15), retry_after=RETRY_AFTER) == 1

    [message] = mail.outbox
    assert due.due_count(learner=learner, today=MON) == 1
    assert message.subject == "1 card due for review today"
    assert Reminder.objects.get(learner=learner).due_count == 1


def test_a_retry_sends_nothing_once_nothing_is_due_and_then_still_once(
    deck, make_learner, settings
):
    learner = make_learner(decks=[deck])
    make_due(learner, deck, 2)
    settings.EMAIL_BACKEND = f"{__name__}.RefusingBackend"
    reminder_pass_here(at=REMIND_AT, retry_after=RETRY_AFTER)

    ReviewState.objects.filter(learner=learner).update(due_on=MON + dt.timedelta(days=3))
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    assert reminder_pass_here(at=REMIND_AT + dt.timedelta(minutes=15), retry_after=RETRY_AFTER) == 0
    assert mail.outbox == []

    # Re-enrolling brings an overdue card back the same day: one reminder, with that count.
    ReviewState.objects.filter(learner=learner, card=deck.cards.order_by("id").first()).update(
        due_on=LONG_AGO
    )
    assert reminder_pass_here(at=REMIND_AT + dt.timedelta(minutes=30), retry_after=RETRY_AFTER) == 1
    assert reminder_pass_here(at=REMIND_AT + dt.timedelta(minutes=45), retry_after=RETRY_AFTER) == 0
    assert [m.subject for m in mail.outbox] == ["1 card due for review today"]


def test_a_dropped_smtp_connection_fails_one_message_not_the_rest_of_the_batch(
    deck, make_learner, settings, monkeypatch
):
    learners = [make_learner(decks=[deck]) for _ in range(3)]
    for learner in learners:
        make_due(learner, deck, 1)
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    monkeypatch.setattr(smtplib, "SMTP", OneMessagePerConnectionSMTP)
    monkeypatch.setattr(OneMessagePerConnectionSMTP, "delivered", [])

    # Sent, dropped with the connection, sent on a fresh connection.
    assert reminder_pass_here(at=REMIND_AT, retry_after=RETRY_AFTER) == 2
    # The dropped one goes out once its claim is free again, exactly once.
    later = REMIND_AT + dt.timedelta(minutes=15)
    assert reminder_pass_here(at=later, retry_after=RETRY_AFTER) == 1
    assert reminder_pass_here(at=later + dt.timedelta(minutes=15), retry_after=RETRY_AFTER) == 0

    assert sorted(OneMessagePerConnectionSMTP.delivered) == sorted(u.email for u in learners)
    assert Reminder.objects.filter(sent_at__isnull=True).count() == 0


def test_with_the_mail_server_down_a_pass_gives_up_early_and_loses_nobody(
    deck, make_learner, settings, monkeypatch
):
    learners = [make_learner(decks=[deck]) for _ in range(8)]
    for learner in learners:
        make_due(learner, deck, 1)
    settings.EMAIL_BACKEND = f"{__name__}.RefusingBackend"
    monkeypatch.setattr(RefusingBackend, "attempts", 0)

    assert reminder_pass_here(at=REMIND_AT, retry_after=RETRY_AFTER) == 0
    # A few tries, not one connection timeout per learner of the batch.
    assert RefusingBackend.attempts <= 3

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    later = REMIND_AT + dt.timedelta(minutes=15)
    assert reminder_pass_here(at=later, retry_after=RETRY_AFTER) == 8
    assert reminder_pass_here(at=later + dt.timedelta(minutes=15), retry_after=RETRY_AFTER) == 0
    assert sorted(m.to[0] for m in mail.outbox) == sorted(u.email for u in learners)


def test_the_soft_time_limit_stops_the_pass_instead_of_counting_as_a_failed_send(
    deck, make_learner, settings
):
    learner = make_learner(decks=[deck])
    make_due(learner, deck, 1)
    settings.EMAIL_BACKEND = f"{__name__}.SoftLimitBackend"

    with pytest.raises(SoftTimeLimitExceeded):
        reminder_pass_here(at=REMIND_AT, retry_after=RETRY_AFTER)

    # The claim waits for a later pass.
    assert Reminder.objects.get(learner=learner).sent_at is None


def test_learners_without_email_are_not_reminded_even_with_cards_due(deck, make_learner):
    learner = make_learner(decks=[deck], email=False)
    make_due(learner, deck, 2)

    assert reminder_pass_here(at=REMIND_AT) == 0
    assert not Reminder.objects.exists()


# --- housekeeping at its edges ------------------------------------------------------------------


def test_housekeeping_keeps_a_key_exactly_24_hours_old_and_an_exercise_exactly_7_days_old(
    django_user_model,
):
    owner = django_user_model.objects.create(username="ada")
    edge = IdempotencyKey.objects.create(learner=owner, key="edge", request_hash="0" * 64)
    IdempotencyKey.objects.filter(pk=edge.pk).update(created_at=AT - dt.timedelta(hours=24))
    ex = Exercise.objects.create(
        owner=owner,
        kind="softmax",
        params={"n": 3, "seed": 7},
        seed=7,
        inputs={"x": [1.0, 2.0, 3.0]},
        asks=[{"name": "weights", "shape": [3]}],
        solution={"weights": [0.09, 0.245, 0.665]},
    )
    Exercise.objects.filter(pk=ex.pk).update(created_at=AT - dt.timedelta(days=7))

    assert housekeeping(at=AT) == {"idempotency_keys": 0, "exercises": 0}
    assert housekeeping(at=AT + dt.timedelta(microseconds=1)) == {
        "idempotency_keys": 1,
        "exercises": 1,
    }
