"""Housekeeping: idempotency keys after 24 hours, unattempted exercises after 7 days."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cards import tasks
from cards.models import Card, ExerciseBinding, IdempotencyKey
from cards.services.housekeeping import housekeeping, purge_stale_exercises
from exercises.models import Attempt, Exercise

AT = dt.datetime(2026, 3, 9, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def owner(db, django_user_model):
    return django_user_model.objects.create(username="ada")


def key(owner, name, age):
    row = IdempotencyKey.objects.create(learner=owner, key=name, request_hash="0" * 64)
    IdempotencyKey.objects.filter(pk=row.pk).update(created_at=AT - age)
    return row


def exercise(owner, age, *, attempts=0):
    row = Exercise.objects.create(
        owner=owner,
        kind="softmax",
        params={"n": 3, "seed": 7},
        seed=7,
        inputs={"x": [1.0, 2.0, 3.0]},
        asks=[{"name": "weights", "shape": [3]}],
        solution={"weights": [0.09, 0.245, 0.665]},
        attempts_used=attempts,
    )
    Exercise.objects.filter(pk=row.pk).update(created_at=AT - age)
    return row


def bind(ex, *, study_day):
    deck_card = Card.objects.create(
        deck_id=_deck_id(),
        kind="exercise",
        prompt="Compute the weights",
        exercise={"kind": "softmax", "params": {}},
    )
    return ExerciseBinding.objects.create(
        exercise=ex, learner=ex.owner, card=deck_card, study_day=study_day
    )


def _deck_id():
    from cards.models import Deck

    return Deck.objects.get_or_create(slug="practice", defaults={"title": "Practice"})[0].id


def test_idempotency_keys_older_than_24_hours_go_and_younger_stay(owner):
    old = key(owner, "old", dt.timedelta(hours=24, seconds=1))
    fresh = key(owner, "fresh", dt.timedelta(hours=23, minutes=59))

    counts = housekeeping(at=AT)

    assert counts["idempotency_keys"] == 1
    assert list(IdempotencyKey.objects.values_list("pk", flat=True)) == [fresh.pk]
    assert not IdempotencyKey.objects.filter(pk=old.pk).exists()


def test_only_never_attempted_exercises_older_than_7_days_go(owner):
    stale = exercise(owner, dt.timedelta(days=7, minutes=1))
    young = exercise(owner, dt.timedelta(days=6, hours=23))
    tried = exercise(owner, dt.timedelta(days=30), attempts=1)
    Attempt.objects.create(
        exercise=tried, number=1, answers={}, correct=False, score=0.0, result={}
    )

    assert housekeeping(at=AT)["exercises"] == 1

    assert set(Exercise.objects.values_list("pk", flat=True)) == {young.pk, tried.pk}
    assert not Exercise.objects.filter(pk=stale.pk).exists()
    assert Attempt.objects.filter(exercise=tried).count() == 1


def test_an_exercise_bound_to_a_review_that_may_be_today_stays(owner):
    current = exercise(owner, dt.timedelta(days=8))
    bind(current, study_day=AT.date() - dt.timedelta(days=1))
    past = exercise(owner, dt.timedelta(days=8))
    past_binding = bind(past, study_day=AT.date() - dt.timedelta(days=8))

    assert housekeeping(at=AT)["exercises"] == 1

    assert list(Exercise.objects.values_list("pk", flat=True)) == [current.pk]
    assert not ExerciseBinding.objects.filter(pk=past_binding.pk).exists()


def test_purge_runs_in_chunks_with_a_fixed_number_of_statements_each(owner):
    for _ in range(7):
        exercise(owner, dt.timedelta(days=10))
    keep = exercise(owner, dt.timedelta(days=1))

    with CaptureQueriesContext(connection) as queries:
        purged = purge_stale_exercises(older_than=AT - dt.timedelta(days=7), at=AT, chunk_size=3)

    assert purged == 7
    assert list(Exercise.objects.values_list("pk", flat=True)) == [keep.pk]
    deletes = [q for q in queries if q["sql"].lstrip().upper().startswith("DELETE")]
    # 3 chunks; each deletes bindings, attempts and exercises by id.
    assert len(deletes) == 3 * 3


def test_a_second_run_finds_nothing(owner):
    exercise(owner, dt.timedelta(days=10))
    key(owner, "k", dt.timedelta(days=2))
    assert housekeeping(at=AT) == {"idempotency_keys": 1, "exercises": 1}
    assert housekeeping(at=AT) == {"idempotency_keys": 0, "exercises": 0}


def test_the_task_reads_the_clock(owner, time_machine):
    time_machine.move_to(AT, tick=False)
    key(owner, "k", dt.timedelta(hours=25))
    exercise(owner, dt.timedelta(days=8))

    assert tasks.housekeeping() == {"idempotency_keys": 1, "exercises": 1}
