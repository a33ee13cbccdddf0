"""The due queue's raw SQL (``cards.db.queue``) says what the rules it restates say.

``in_pause_sql`` against ``ladder.in_pause``, ``due_count_sql`` (the reminder pass's count)
against ``due.queue_states``, and the state-count fast paths (``due.due_count``,
``due.counted_states``) against the same definition, for states in and out of the queue
in every way, on whichever database the suite runs: run this file with and without
``DATABASE_URL`` to hold both.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection

from cards import due, ladder
from cards.db.queue import due_count_sql, in_pause_sql
from cards.models import Card, Deck, LearnerProfile, ReviewState

pytestmark = pytest.mark.django_db

TODAY = dt.date(2026, 3, 4)
DAYS = [TODAY + dt.timedelta(days=n) for n in (-9, -3, -1, 0, 1, 2, 5, 11)]
PAUSES = [(None, 0), (None, 4), (TODAY, 0), (TODAY, 1), (TODAY - dt.timedelta(days=2), 4)]


def _day(value) -> str:
    return connection.ops.adapt_datefield_value(value)


@pytest.fixture
def learners(make_user):
    """A learner per pause, each with states due, suspended, buried and unscheduled."""
    deck = Deck.objects.create(slug="d", title="D")
    cards = [Card.objects.create(deck=deck, kind="recall", prompt=f"P{i}") for i in range(12)]
    users = []
    for n, (start, days) in enumerate(PAUSES):
        user = make_user(f"u{n}")
        LearnerProfile.objects.filter(user=user).update(pause_start=start, pause_days=days)
        for i, card in enumerate(cards):
            ReviewState.objects.create(
                learner=user,
                card=card,
                step=i % 5,
                due_on=TODAY + dt.timedelta(days=(i * 3 + n) % 9 - 4),
                suspended=i % 5 == 1,
                buried_on={
                    2: TODAY,
                    3: TODAY - dt.timedelta(days=1),
                    7: TODAY + dt.timedelta(1),
                }.get(i % 8),
                scheduled=i != 10,
            )
        users.append(get_fresh(user))
    return users


def get_fresh(user):
    return type(user).objects.select_related("profile").get(pk=user.pk)


def test_in_pause_sql_is_the_ladders_rule(learners):
    assert {(u.profile.pause_start, u.profile.pause_days) for u in learners} == set(PAUSES)
    for user in learners:
        for day in DAYS:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT CASE WHEN {in_pause_sql('p', 'g.day')} THEN 1 ELSE 0 END "
                    "FROM cards_learnerprofile p, (SELECT %s AS day) g WHERE p.user_id = %s",
                    [_day(day), user.pk],
                )
                (inside,) = cursor.fetchone()
            profile = user.profile
            expected = ladder.in_pause(day, profile.pause_start, profile.pause_days)
            assert bool(inside) is expected, (profile.pause_start, profile.pause_days, day)


def test_the_reminders_due_count_is_the_queue(learners):
    seen = set()
    for user in learners:
        for day in DAYS:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT {due_count_sql('g.learner', 'g.day')} "
                    "FROM (SELECT %s AS learner, %s AS day) g",
                    [True, user.pk, _day(day)],
                )
                (count,) = cursor.fetchone()
            expected = due.queue_states(learner=user, today=day).count()
            assert count == expected, (user.username, day)
            seen.add(expected > 0)
    assert seen == {True, False}  # the cases cover an empty queue and a non-empty one


def test_the_state_count_paths_are_the_queue(learners):
    for user in learners:
        for day in DAYS:
            queue = due.queue_states(learner=user, today=day)
            assert due.due_count(learner=user, today=day) == queue.count(), (user.username, day)
            horizon = day + dt.timedelta(days=6)
            forecast, by_step = due.counted_states(learner=user, today=day, horizon=horizon)
            # The forecast is the queue up to the horizon, whatever the pause.
            states = ReviewState.objects.filter(
                learner=user, scheduled=True, suspended=False, due_on__lte=horizon
            ).exclude(buried_on=day)
            expected: dict[dt.date, int] = {}
            for state in states:
                expected[state.due_on] = expected.get(state.due_on, 0) + 1
            assert dict(forecast) == expected, (user.username, day)
            steps: dict[int, int] = {}
            for step in ReviewState.objects.filter(learner=user, scheduled=True).values_list(
                "step", flat=True
            ):
                steps[step] = steps.get(step, 0) + 1
            assert dict(by_step) == steps
