"""One rule for "a bound exercise is spent": the model's ``ExerciseBinding.SPENT``, its
``is_spent`` for a loaded row, and the SQL that replaces a spent binding
(``cards.db.bindings``) agree, on whichever database the tests run (SQLite, or
PostgreSQL with DATABASE_URL)."""

from __future__ import annotations

import datetime as dt

import pytest

from cards.db.bindings import bind_exercises
from cards.models import Card, Deck, ExerciseBinding, ReviewLog
from exercises.models import Exercise
from exercises.services import exercise_build

pytestmark = pytest.mark.django_db

TODAY = dt.date(2026, 3, 10)
AT = dt.datetime(2026, 3, 10, 12, 0, tzinfo=dt.UTC)


def _variant(learner) -> Exercise:
    return exercise_build(owner=learner, kind="attention", params={"n": 2}, bound=True)


@pytest.fixture
def bindings(learner):
    """Today's bindings of four cards: (reviewed, attempted) in every combination."""
    deck = Deck.objects.create(slug="spent", title="Spent")
    made = {}
    for position, (reviewed, attempts) in enumerate([(False, 0), (False, 1), (True, 0), (True, 1)]):
        card = Card.objects.create(
            deck=deck,
            kind="exercise",
            prompt="P",
            exercise={"kind": "attention", "params": {"n": 2}},
            position=position,
        )
        exercise = _variant(learner)
        exercise.attempts_used = attempts
        exercise.save()
        review = None
        if reviewed:
            review = ReviewLog.objects.create(
                learner=learner,
                card=card,
                reviewed_at=AT,
                study_day=TODAY,
                result="pass",
                step_before=0,
                step_after=1,
                interval_days=1,
                due_before=TODAY,
                due_after=TODAY + dt.timedelta(days=1),
            )
        made[(reviewed, attempts)] = ExerciseBinding.objects.create(
            exercise=exercise, learner=learner, card=card, study_day=TODAY, review=review
        )
    return made


def test_spent_is_answered_as_practice_and_nothing_else(bindings):
    spent = set(ExerciseBinding.objects.spent().values_list("pk", flat=True))
    assert spent == {bindings[(False, 1)].pk}
    usable = set(ExerciseBinding.objects.usable().values_list("pk", flat=True))
    assert usable == {b.pk for b in bindings.values()} - spent
    assert {b.pk for b in ExerciseBinding.objects.all() if b.is_spent} == spent


def test_binding_anew_replaces_exactly_the_spent_bindings(learner, bindings):
    spent_cards = set(ExerciseBinding.objects.spent().values_list("card_id", flat=True))
    built = [(b.card_id, _variant(learner)) for b in bindings.values()]
    won = bind_exercises(learner=learner, built=built, today=TODAY)
    assert set(won) == spent_cards
    for card_id, exercise_id in won.items():
        assert ExerciseBinding.objects.get(card_id=card_id).exercise_id == exercise_id
    kept = {b.card_id: b.exercise_id for b in bindings.values() if b.card_id not in won}
    assert {
        b.card_id: b.exercise_id for b in ExerciseBinding.objects.exclude(card_id__in=won)
    } == kept
