"""The beat job that places new cards, its enqueue path, and the beat schedule defaults."""

from __future__ import annotations

import datetime as dt
import json
import logging

import pytest
from celery.schedules import crontab
from django.contrib.admin.models import CHANGE, LogEntry
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask
from kombu.exceptions import OperationalError

from cards import ladder, tasks
from cards.beat import sync_default_schedule
from cards.models import Card, Deck, Enrollment, LearnerProfile, ReviewDay, ReviewState
from cards.services import scheduling
from cards.services.scheduling import schedule_new_cards

AT = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)  # Monday noon UTC


@pytest.fixture
def make_learner(db, django_user_model):
    counter = iter(range(1, 10_000))

    def make(tz="UTC", day_starts_at=4, *, decks=()):
        """A learner who reviewed on their study day at AT: the pace places their cards."""
        # No password: hashing one costs more than the whole test.
        user = django_user_model.objects.create(username=f"learner{next(counter)}")
        LearnerProfile.objects.filter(user=user).update(timezone=tz, day_starts_at=day_starts_at)
        for deck in decks:
            Enrollment.objects.create(learner=user, deck=deck)
        day = ladder.study_day(AT, ladder.zone_or_utc(tz), day_starts_at)
        ReviewDay.objects.create(learner=user, study_day=day, reviews=1, passes=1)
        return user

    return make


def states(user):
    return {s.card_id: (s.step, s.due_on) for s in ReviewState.objects.filter(learner=user)}


# (time zone, day start) -> due date of a card placed at Monday 2026-03-02 12:00 UTC.
FIRST_DUE = [
    ("UTC", 4, dt.date(2026, 3, 3)),  # 12:00, study day Mon
    ("Pacific/Kiritimati", 4, dt.date(2026, 3, 3)),  # Tue 02:00 local: still Monday's study day
    ("Pacific/Kiritimati", 0, dt.date(2026, 3, 4)),  # Tue 02:00 local, day starts at midnight
    ("Etc/GMT+12", 4, dt.date(2026, 3, 2)),  # Mon 00:00 local: Sunday's study day
    ("Etc/GMT+12", 0, dt.date(2026, 3, 3)),  # Mon 00:00 local, day starts at midnight
    ("America/New_York", 4, dt.date(2026, 3, 3)),  # Mon 07:00 local
    ("Asia/Kolkata", 23, dt.date(2026, 3, 2)),  # Mon 17:30 local, before the 23:00 start
]


@pytest.mark.parametrize(("tz", "day_starts_at", "due_on"), FIRST_DUE)
def test_new_card_lands_on_rung_zero_due_the_learners_tomorrow(
    deck, make_learner, tz, day_starts_at, due_on
):
    learner = make_learner(tz, day_starts_at, decks=[deck])

    placed = schedule_new_cards(at=AT)

    active = set(deck.cards.filter(is_active=True).values_list("id", flat=True))
    assert placed == len(active) == 4
    assert states(learner) == {card_id: (0, due_on) for card_id in active}


def test_learners_in_different_zones_are_placed_in_one_run(deck, make_learner):
    learners = {(tz, start): make_learner(tz, start, decks=[deck]) for tz, start, _ in FIRST_DUE}

    assert schedule_new_cards(at=AT) == 4 * len(FIRST_DUE)

    for tz, start, due_on in FIRST_DUE:
        assert {due for _, due in states(learners[(tz, start)]).values()} == {due_on}


def test_existing_states_are_never_touched_and_a_rerun_places_nothing(deck, make_learner):
    learner = make_learner(decks=[deck])
    reviewed = deck.cards.first()
    ReviewState.objects.create(learner=learner, card=reviewed, step=3, due_on=dt.date(2026, 3, 20))

    assert schedule_new_cards(at=AT) == 3
    assert states(learner)[reviewed.id] == (3, dt.date(2026, 3, 20))
    assert schedule_new_cards(at=AT + dt.timedelta(days=5)) == 0
    assert len(states(learner)) == 4


def test_only_active_cards_of_enrolled_decks_are_placed(deck, other_deck, make_learner):
    learner = make_learner(decks=[deck])
    inactive = Card.objects.create(deck=deck, prompt="Retired", is_active=False)

    schedule_new_cards(at=AT)

    placed = states(learner)
    assert inactive.id not in placed
    assert not set(other_deck.cards.values_list("id", flat=True)) & set(placed)


def test_deactivated_card_keeps_its_state_and_a_reactivated_unplaced_card_is_placed(
    deck, make_learner
):
    learner = make_learner(decks=[deck])
    schedule_new_cards(at=AT)
    kept = deck.cards.first()
    ReviewState.objects.filter(learner=learner, card=kept).update(
        step=2, due_on=dt.date(2026, 3, 9)
    )
    never_placed = Card.objects.create(deck=deck, prompt="Dormant", is_active=False)

    Card.objects.filter(pk=kept.pk).update(is_active=False)
    assert schedule_new_cards(at=AT + dt.timedelta(days=1)) == 0
    Card.objects.filter(pk__in=[kept.pk, never_placed.pk]).update(is_active=True)

    assert schedule_new_cards(at=AT + dt.timedelta(days=1)) == 1
    assert states(learner)[kept.id] == (2, dt.date(2026, 3, 9))
    # Placed from Monday's unspent allowance (the learner reviewed Monday, not Tuesday):
    # due Tuesday, as a card placed on Monday is.
    assert states(learner)[never_placed.id] == (0, dt.date(2026, 3, 3))


def test_deck_id_limits_the_run_to_one_deck(deck, other_deck, make_learner):
    learner = make_learner(decks=[deck, other_deck])

    assert schedule_new_cards(at=AT, deck_id=other_deck.id) == 1
    assert set(states(learner)) == set(other_deck.cards.values_list("id", flat=True))
    assert schedule_new_cards(at=AT) == 4


def test_no_enrolments_means_no_statement_beyond_the_group_query(deck, make_learner):
    make_learner()
    with CaptureQueriesContext(connection) as queries:
        assert schedule_new_cards(at=AT) == 0
    assert len(queries) == 1


def test_chunks_by_learner_give_the_same_rows_with_statements_per_chunk_not_per_row(
    make_learner,
):
    decks = [Deck.objects.create(slug=f"d{i}", title=f"D{i}") for i in range(2)]
    Card.objects.bulk_create(
        [Card(deck=d, prompt=f"{d.slug}-{i}", position=i) for d in decks for i in range(5)]
    )
    zones = ["UTC", "Pacific/Kiritimati", "Etc/GMT+12"]
    learners = [make_learner(zones[i % 3], decks=decks) for i in range(7)]

    with CaptureQueriesContext(connection) as queries:
        placed = schedule_new_cards(at=AT, chunk_size=4)

    assert placed == 7 * 10
    assert ReviewState.objects.filter(learner__in=learners).count() == 70
    inserts = [q for q in queries if q["sql"].lstrip().upper().startswith("INSERT")]
    # 14 enrolments in chunks of 4 -> 4 ranges, one INSERT ... SELECT each, for
    # yesterday's allowance and for today's.
    assert len(inserts) == 2 * 4
    assert len(queries) == 1 + 1 + len(inserts)  # groups, the range bounds in one query


def test_unknown_time_zone_counts_as_utc(deck, make_learner, caplog):
    learner = make_learner("Mars/Olympus_Mons", 4, decks=[deck])

    with caplog.at_level(logging.WARNING):
        schedule_new_cards(at=AT)

    assert {due for _, due in states(learner).values()} == {dt.date(2026, 3, 3)}
    assert "Mars/Olympus_Mons" in caplog.text


def test_the_task_places_cards_as_of_now(deck, make_learner, time_machine):
    time_machine.move_to(AT, tick=False)
    learner = make_learner("Pacific/Kiritimati", 0, decks=[deck])

    assert tasks.schedule_new_cards(deck_id=deck.id) == 4
    assert {due for _, due in states(learner).values()} == {dt.date(2026, 3, 4)}


# --- enqueue after commit ------------------------------------------------------------


def test_enqueue_publishes_only_after_commit(deck, monkeypatch, django_capture_on_commit_callbacks):
    published = []
    monkeypatch.setattr(
        tasks.schedule_new_cards, "apply_async", lambda **kw: published.append(kw["kwargs"])
    )

    with django_capture_on_commit_callbacks(execute=True) as callbacks, transaction.atomic():
        scheduling.enqueue_schedule_new_cards(deck.id)
        assert published == []

    assert len(callbacks) == 1
    assert published == [{"deck_id": deck.id}]


def test_enqueue_with_the_broker_down_logs_a_warning_and_never_raises(
    deck, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    def broker_down(**kwargs):
        assert kwargs["retry_policy"]["max_retries"] == 0  # a request must not wait on retries
        raise OperationalError("Error 111 connecting to 127.0.0.1:1. Connection refused.")

    monkeypatch.setattr(tasks.schedule_new_cards, "apply_async", broker_down)

    with (
        caplog.at_level(logging.WARNING, logger="cards.services.scheduling"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        scheduling.enqueue_schedule_new_cards(deck.id)

    assert "Could not enqueue schedule_new_cards" in caplog.text
    assert f"deck {deck.id}" in caplog.text


def test_a_card_created_by_staff_reaches_enrolled_learners_through_the_task(
    deck, make_learner, settings, django_capture_on_commit_callbacks, time_machine
):
    from cards.services import card_create
    from studyapp.celery import app

    time_machine.move_to(AT, tick=False)
    learner = make_learner(decks=[deck])
    schedule_new_cards(at=AT)
    app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            card = card_create(deck=deck, kind="recall", prompt="Why divide by sqrt(d_k)?")
    finally:
        app.conf.task_always_eager = False

    assert states(learner)[card.id] == (0, dt.date(2026, 3, 3))


# --- beat schedule defaults -----------------------------------------------------------


DEFAULTS = {
    "schedule-new-cards": {
        "task": "cards.tasks.schedule_new_cards",
        "schedule": crontab(minute="*/10"),
    },
    "send-due-reminders": {
        "task": "cards.tasks.send_due_reminders",
        "schedule": crontab(minute="*/15"),
        "kwargs": {"retry_after_seconds": 900},
    },
    "housekeeping": {
        "task": "cards.tasks.housekeeping",
        "schedule": crontab(minute=17, hour="*"),
    },
    "every-minute-probe": {
        "task": "cards.tasks.housekeeping",
        "schedule": dt.timedelta(seconds=60),
        "options": {"queue": "maintenance", "expires": 50},
    },
}


@pytest.mark.django_db
def test_migrate_seeded_the_default_schedule():
    # post_migrate ran when the test database was created.
    tasks_by_name = {t.name: t for t in PeriodicTask.objects.select_related("crontab")}
    assert tasks_by_name["schedule-new-cards"].task == "cards.tasks.schedule_new_cards"
    assert tasks_by_name["schedule-new-cards"].crontab.minute == "*/10"
    assert tasks_by_name["send-due-reminders"].crontab.minute == "*/15"
    assert tasks_by_name["housekeeping"].crontab.minute == "17"
    assert tasks_by_name["housekeeping"].crontab.hour == "*"


@pytest.mark.django_db
def test_sync_creates_missing_tasks_with_their_schedules_and_options(settings):
    PeriodicTask.objects.all().delete()
    settings.CELERY_BEAT_SCHEDULE = DEFAULTS

    assert sorted(sync_default_schedule()) == sorted(DEFAULTS)

    reminders = PeriodicTask.objects.get(name="send-due-reminders")
    assert json.loads(reminders.kwargs) == {"retry_after_seconds": 900}
    probe = PeriodicTask.objects.get(name="every-minute-probe")
    assert (probe.interval.every, probe.interval.period) == (60, IntervalSchedule.SECONDS)
    assert (probe.queue, probe.expire_seconds) == ("maintenance", 50)
    assert sync_default_schedule() == []


@pytest.mark.django_db
def test_sync_leaves_staff_edits_alone(settings, admin_user):
    settings.CELERY_BEAT_SCHEDULE = DEFAULTS
    sync_default_schedule()
    hourly, _ = CrontabSchedule.objects.get_or_create(minute="0", hour="*")
    edited = PeriodicTask.objects.filter(name="send-due-reminders")
    edited.update(crontab=hourly, enabled=False, kwargs="{}")
    # Recorded as the admin's change form records it (tests/cards/test_beat_defaults.py).
    LogEntry.objects.log_actions(admin_user.pk, edited, CHANGE)
    PeriodicTask.objects.filter(name="housekeeping").delete()

    assert sync_default_schedule() == ["housekeeping"]

    edited = PeriodicTask.objects.get(name="send-due-reminders")
    assert (edited.crontab_id, edited.enabled, edited.kwargs) == (hourly.id, False, "{}")


@pytest.mark.django_db
def test_beat_start_keeps_staff_edits(settings, monkeypatch):
    from django_celery_beat import schedulers

    from cards.beat import DefaultsOnceScheduler
    from studyapp.celery import app

    # The scheduler drops connections inside a transaction, as the test case is in.
    monkeypatch.setattr(schedulers, "close_old_connections", lambda: None)

    settings.CELERY_BEAT_SCHEDULE = DEFAULTS
    sync_default_schedule()
    PeriodicTask.objects.filter(name="housekeeping").update(enabled=False)
    PeriodicTask.objects.filter(name="every-minute-probe").delete()

    scheduler = DefaultsOnceScheduler(app=app, lazy=True)
    scheduler.setup_schedule()

    assert PeriodicTask.objects.get(name="housekeeping").enabled is False
    assert PeriodicTask.objects.filter(name="every-minute-probe").exists()
    assert "housekeeping" not in scheduler.schedule
    assert "schedule-new-cards" in scheduler.schedule


def test_statements_are_sized_by_rows_so_small_decks_take_few_statements(make_learner, monkeypatch):
    monkeypatch.setattr(scheduling, "DEFAULT_CHUNK_SIZE", 2)
    monkeypatch.setattr(scheduling, "ROWS_PER_STATEMENT", 30)
    one_card = Deck.objects.create(slug="one", title="One")
    Card.objects.create(deck=one_card, prompt="Only card")
    learners = [make_learner(decks=[one_card]) for _ in range(12)]

    with CaptureQueriesContext(connection) as queries:
        assert schedule_new_cards(at=AT) == 12
    inserts = [q for q in queries if q["sql"].lstrip().upper().startswith("INSERT")]
    assert len(inserts) == 2  # 30 rows per statement: all 12 learners at once, per day

    ten_cards = Deck.objects.create(slug="ten", title="Ten")
    Card.objects.bulk_create([Card(deck=ten_cards, prompt=f"c{i}") for i in range(10)])
    for learner in learners:
        Enrollment.objects.create(learner=learner, deck=ten_cards)
    with CaptureQueriesContext(connection) as queries:
        assert schedule_new_cards(at=AT) == 120
    inserts = [q for q in queries if q["sql"].lstrip().upper().startswith("INSERT")]
    # 10-card decks: ranges of ~3 enrolments (30 rows), whole learners each: 24 enrolments
    # of 12 learners (the one-card deck's already placed) take 4 to 8 statements.
    assert 4 <= len(inserts) <= 8
