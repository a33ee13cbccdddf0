"""Each rule's other forms say what its definition says, over random histories.

* What is due: ``cards.due.queue_states`` (``due_filter`` and the pause) is the definition;
  the due count from the state counts, the due page compiled once, the stats' due count
  and forecast (``due_outlook``), and the reminder pass's ``due_count_sql`` are held to it
  for learners in several time zones and day starts, with states on every rung, due
  around the learner's study day, suspended, buried, paused or unenrolled.
* Who gets a reminder: ``reminder_claims.recipients`` is the definition; the condition
  the claim statements use (``cards.db.reminders.recipient_sql``) and the claims they make
  are held to it.

The kept review and the leech have theirs in ``test_lapse_forms.py``. Run these with and
without ``DATABASE_URL`` to hold both databases.
"""

from __future__ import annotations

import datetime as dt
from contextlib import contextmanager
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cards import due, ladder
from cards.db.placement import groups_table
from cards.db.queue import due_count_sql
from cards.db.reminders import recipient_sql
from cards.models import Card, Deck, Enrollment, LearnerProfile, ReviewState
from cards.services.reminder_claims import claim_new, recipients
from cards.services.scheduling import sync_scheduled
from cards.stats import FORECAST_DAYS, learner_stats

pytestmark = pytest.mark.django_db

EXAMPLES = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# Zones from UTC-11 to UTC+14, one with a half hour, one with DST, and a name no zone has
# (read as UTC).
ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Asia/Kolkata",
    "Pacific/Kiritimati",
    "Pacific/Pago_Pago",
    "No/Such_Zone",
]
CARDS_PER_DECK = 4
INSTANTS = st.datetimes(
    min_value=dt.datetime(2026, 1, 1),
    max_value=dt.datetime(2026, 12, 31),
    timezones=st.just(dt.UTC),
)


@contextmanager
def rolled_back():
    """Each example writes its own history and leaves nothing behind for the next."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


def _day(value: dt.date) -> Any:
    return connection.ops.adapt_datefield_value(value)


@pytest.fixture
def decks(db):
    """Two decks; the last card of the first is inactive, so its states are unscheduled."""
    made = []
    for d in range(2):
        deck = Deck.objects.create(slug=f"deck{d}", title=f"Deck {d}")
        for i in range(CARDS_PER_DECK):
            Card.objects.create(deck=deck, kind="recall", prompt=f"P{d}.{i}", position=i)
        made.append(deck)
    Card.objects.filter(deck=made[0], position=CARDS_PER_DECK - 1).update(is_active=False)
    return made


# --- What is due, and who is reminded ------------------------------------------------------

# A state: (step, due date from the learner's study day, suspended, buried from that day).
STATE = st.tuples(
    st.integers(0, 6), st.integers(-6, 8), st.booleans(), st.sampled_from([None, -1, 0, 1])
)
LEARNER = st.fixed_dictionaries(
    {
        "zone": st.sampled_from(ZONES),
        "day_starts_at": st.integers(0, 23),
        "reminder_hour": st.integers(0, 23),
        "reminders": st.booleans(),
        "active": st.booleans(),
        "email": st.sampled_from(["own", ""]),
        "confirmed": st.sampled_from(["own", "old", ""]),
        # The pause from the study day: (start, days); no days is no pause.
        "pause": st.sampled_from([(0, 0), (0, 1), (-2, 4), (-3, 3), (-1, 40), (1, 2)]),
        "enrolled": st.sets(st.integers(0, 1)),
        "states": st.dictionaries(st.integers(0, 2 * CARDS_PER_DECK - 1), STATE),
    }
)


def make_learner(n: int, spec: dict, *, at: dt.datetime, cards: list[Card]):
    """The learner of ``spec``, their study day at ``at`` and their states."""
    email = f"learner{n}@example.org" if spec["email"] == "own" else ""
    confirmed = {"own": email, "old": f"old{n}@example.org", "": ""}[spec["confirmed"]]
    user = get_user_model().objects.create(
        username=f"learner{n}", email=email, is_active=spec["active"]
    )
    zone = ladder.zone_or_utc(spec["zone"])
    today = ladder.study_day(at, zone, spec["day_starts_at"])
    start, days = spec["pause"]
    LearnerProfile.objects.filter(user=user).update(
        timezone=spec["zone"],
        day_starts_at=spec["day_starts_at"],
        reminder_hour=spec["reminder_hour"],
        reminders=spec["reminders"],
        confirmed_email=confirmed,
        pause_start=today + dt.timedelta(days=start),
        pause_days=days,
    )
    for d in sorted(spec["enrolled"]):
        Enrollment.objects.create(learner=user, deck=cards[d * CARDS_PER_DECK].deck)
    ReviewState.objects.bulk_create(
        ReviewState(
            learner=user,
            card=cards[i],
            step=step,
            due_on=today + dt.timedelta(days=due_in),
            suspended=suspended,
            buried_on=None if buried is None else today + dt.timedelta(days=buried),
        )
        for i, (step, due_in, suspended, buried) in spec["states"].items()
    )
    # Scheduled: an active card of a deck the learner is enrolled in.
    sync_scheduled(learner_id=user.pk)
    return get_user_model().objects.select_related("profile").get(pk=user.pk), today


def forecast_by_hand(learner, today: dt.date) -> dict[dt.date, int]:
    """The forecast as the rule says it, from the states: on each day from ``today``, the
    states that would be in the queue by then were nothing reviewed or buried meanwhile
    (scheduled, not suspended, not buried today, due by that day), less those counted on
    an earlier day; nothing on the days of a pause that covers today."""
    profile = learner.profile
    window = [today + dt.timedelta(days=i) for i in range(FORECAST_DAYS)]
    first_open = today
    while ladder.in_pause(first_open, profile.pause_start, profile.pause_days):
        first_open += dt.timedelta(days=1)
    states = list(ReviewState.objects.filter(learner=learner))
    forecast, counted = {}, 0
    for day in window:
        by_then = sum(
            1
            for s in states
            if s.scheduled and not s.suspended and s.buried_on != today and s.due_on <= day
        )
        forecast[day] = by_then - counted if day >= first_open else 0
        counted = by_then if day >= first_open else 0
    return forecast


def reminder_due_count(learner, today: dt.date) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {due_count_sql('g.learner', 'g.day')} "
            "FROM (SELECT %s AS learner, %s AS day) g",
            [True, learner.pk, _day(today)],
        )
        return cursor.fetchone()[0]


@EXAMPLES
@given(at=INSTANTS, specs=st.lists(LEARNER, min_size=1, max_size=6))
def test_every_form_of_what_is_due_is_the_queue(decks, at, specs):
    cards = [card for deck in decks for card in deck.cards.order_by("position")]
    with rolled_back():
        learners = [make_learner(n, spec, at=at, cards=cards) for n, spec in enumerate(specs)]
        for learner, today in learners:
            states = due.queue_states(learner=learner, today=today).order_by("due_on", "id")
            queue = list(states.values_list("id", flat=True))
            assert due.due_count(learner=learner, today=today) == len(queue)
            page = due.due_page(learner=learner, today=today, offset=0, limit=100)
            assert [row["id"] for row in page] == queue
            assert reminder_due_count(learner, today) == len(queue)
            stats = learner_stats(learner=learner, today=today)
            assert stats["due_today"] == len(queue)
            forecast = {day["date"]: day["count"] for day in stats["forecast"]}
            assert forecast == forecast_by_hand(learner, today)


@EXAMPLES
@given(at=INSTANTS, specs=st.lists(LEARNER, min_size=1, max_size=6))
def test_the_reminder_claims_are_the_recipients_with_cards_due(decks, at, specs):
    cards = [card for deck in decks for card in deck.cards.order_by("position")]
    with rolled_back():
        learners = [make_learner(n, spec, at=at, cards=cards) for n, spec in enumerate(specs)]
        wanted = set(recipients().values_list("user_id", flat=True))
        groups = {
            (u.profile.timezone, u.profile.day_starts_at, u.profile.reminder_hour): today
            for u, today in learners
        }
        table, params = groups_table(
            [(*group, day) for group, day in groups.items()],
            ("tz", "day_start", "hour", "study_day"),
        )
        claims = claim_new(table=table, table_params=params, at=at, after=0, up_to=None)
        expected = {}
        for learner, today in learners:
            count = due.queue_states(learner=learner, today=today).count()
            if learner.pk in wanted and count:
                expected[learner.pk] = (today, count)
        assert {c.learner_id: (c.study_day, c.due_count) for c in claims} == expected


RECIPIENT = st.fixed_dictionaries(
    {
        "reminders": st.booleans(),
        "active": st.booleans(),
        "email": st.sampled_from(["own", ""]),
        "confirmed": st.sampled_from(["own", "old", ""]),
    }
)


@EXAMPLES
@given(specs=st.lists(RECIPIENT, min_size=1, max_size=8))
def test_the_claims_recipient_condition_is_the_recipients(specs):
    with rolled_back():
        for n, spec in enumerate(specs):
            email = f"learner{n}@example.org" if spec["email"] == "own" else ""
            user = get_user_model().objects.create(
                username=f"learner{n}", email=email, is_active=spec["active"]
            )
            LearnerProfile.objects.filter(user=user).update(
                reminders=spec["reminders"],
                confirmed_email={"own": email, "old": f"old{n}@example.org", "": ""}[
                    spec["confirmed"]
                ],
            )
        condition, params = recipient_sql("p", "u")
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT p.user_id FROM cards_learnerprofile p "
                f"JOIN {get_user_model()._meta.db_table} u ON u.id = p.user_id WHERE {condition}",
                params,
            )
            found = {row[0] for row in cursor.fetchall()}
        assert found == set(recipients().values_list("user_id", flat=True))
