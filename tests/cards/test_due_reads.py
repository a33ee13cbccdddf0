"""``GET reviews/due/`` only reads; the exercises it shows are bound by writes and the beat.

Each exercise card in the queue carries a fresh exercise bound to its review that study
day (the contract). The page binds none of them: the beat binds them ahead of each study
day (``exercises_bind_ahead``, run with the placement job), and the writes that change a
queue during a day bind what it then lacks (``queue_exercises_bind``).
"""

from __future__ import annotations

import datetime as dt

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cards import services
from cards.models import Card, Deck, ExerciseBinding, LearnerProfile, ReviewState
from cards.services.due_exercises import exercises_bind_ahead
from exercises.models import Exercise

pytestmark = pytest.mark.django_db

DUE = "/api/v1/reviews/due/?page_size=100"
START = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)
DAY2 = START + dt.timedelta(days=2)
WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "MERGE")


@pytest.fixture
def deck(db) -> Deck:
    deck = Deck.objects.create(slug="drills", title="Drills")
    for i in range(3):
        Card.objects.create(
            deck=deck,
            key=f"drill-{i}",
            kind="exercise",
            prompt=f"Head {i} by hand",
            exercise={"kind": "attention", "params": {"n": 2}},
            position=i,
        )
    Card.objects.create(deck=deck, key="recall", kind="recall", prompt="Q", answer="A", position=3)
    return deck


def enrol(learner, deck, at=START) -> None:
    LearnerProfile.objects.filter(user=learner).update(new_cards_per_day=1000)
    learner.refresh_from_db()
    services.enroll(learner=learner, deck=deck, at=at)


def row_counts() -> dict[str, int]:
    with connection.cursor() as cursor:
        counts = {}
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")
            counts[table] = cursor.fetchone()[0]
    return counts


def read_only_get(api) -> dict:
    """The due page, asserting it wrote nothing: no statement that writes, no row more or less."""
    before = row_counts()
    with CaptureQueriesContext(connection) as ctx:
        response = api.get(DUE)
    assert response.status_code == 200, response.content
    writes = [
        q["sql"] for q in ctx.captured_queries if q["sql"].lstrip().upper().startswith(WRITES)
    ]
    assert writes == []
    assert row_counts() == before
    return response.json()


def exercises_on(page: dict) -> dict[str, dict | None]:
    return {i["card"]["key"]: i.get("exercise") for i in page["results"] if "exercise" in i}


def test_a_day_no_write_has_prepared_shows_its_exercises_unbound_and_writes_nothing(
    api, learner, deck
):
    enrol(learner, deck)
    with time_machine.travel(DAY2, tick=False):  # the enrolment bound the day before this
        page = read_only_get(api)
        assert page["count"] == 4
        assert set(exercises_on(page).values()) == {None}  # not bound yet: passed over
        assert exercises_bind_ahead(at=timezone.now()) == 6  # today's three, tomorrow's three
        first = read_only_get(api)
        again = read_only_get(api)
    bound = exercises_on(first)
    assert all(bound.values()) and bound == exercises_on(again)
    today = ExerciseBinding.objects.filter(learner=learner, study_day=DAY2.date())
    assert set(today.values_list("exercise_id", flat=True)) == {e["id"] for e in bound.values()}


def test_a_card_that_cannot_generate_and_a_spent_exercise_are_read_as_they_are(api, learner, deck):
    enrol(learner, deck)
    with time_machine.travel(DAY2, tick=False):
        exercises_bind_ahead(at=timezone.now())
        spent = exercises_on(read_only_get(api))["drill-0"]["id"]
        Exercise.objects.filter(pk=spent).update(attempts_used=1)  # answered as practice
        Card.objects.filter(key="drill-1").update(
            exercise={"kind": "attention", "params": {"n": 99}}
        )
        ExerciseBinding.objects.filter(card__key="drill-1").delete()
        page = read_only_get(api)  # neither replaced nor flagged by the page
        assert exercises_on(page)["drill-0"] is None and exercises_on(page)["drill-1"] is None
        assert Card.objects.get(key="drill-1").generation_error == ""
        exercises_bind_ahead(at=timezone.now())  # the beat replaces one and flags the other
        page = read_only_get(api)
    assert exercises_on(page)["drill-0"]["id"] != spent
    assert exercises_on(page)["drill-1"] is None
    assert "params.n" in Card.objects.get(key="drill-1").generation_error


def test_the_beat_binds_each_learners_own_study_days_and_skips_what_is_not_in_the_queue(
    learner, other_learner, deck
):
    enrol(learner, deck)
    enrol(other_learner, deck)
    # 02:00 UTC on DAY2: still DAY2 - 1 for a learner whose day starts at 04:00 UTC, already
    # DAY2 in Tokyo (UTC+9).
    at = dt.datetime.combine(DAY2.date(), dt.time(2), tzinfo=dt.UTC)
    LearnerProfile.objects.filter(user=other_learner).update(timezone="Asia/Tokyo")
    drill = list(deck.cards.filter(kind="exercise").order_by("position"))
    ReviewState.objects.filter(learner=learner, card=drill[0]).update(suspended=True)
    yesterday = (at - dt.timedelta(days=1)).date()
    ReviewState.objects.filter(learner=learner, card=drill[1]).update(buried_on=yesterday)
    ExerciseBinding.objects.all().delete()
    exercises_bind_ahead(at=at)

    def days(who, card):
        qs = ExerciseBinding.objects.filter(learner=who, card=card)
        return sorted(qs.values_list("study_day", flat=True))

    assert days(learner, drill[0]) == []  # suspended
    assert days(learner, drill[1]) == [DAY2.date()]  # buried today, back tomorrow
    assert days(learner, drill[2]) == [yesterday, DAY2.date()]
    assert days(other_learner, drill[2]) == [DAY2.date(), DAY2.date() + dt.timedelta(days=1)]
    assert exercises_bind_ahead(at=at) == 0  # a second run binds nothing


def test_a_paused_learner_gets_nothing_bound_and_ending_the_pause_binds_at_once(api, learner, deck):
    enrol(learner, deck)
    with time_machine.travel(DAY2, tick=False):
        today = DAY2.date()
        services.pause_begin(learner=learner, start=today, days=3, today=today)
        # Due within the pause (the pause moved the dates on; these are put back): nothing
        # is in the queue while it runs, so nothing is bound for it.
        ReviewState.objects.filter(learner=learner).update(due_on=today)
        ExerciseBinding.objects.all().delete()
        assert exercises_bind_ahead(at=timezone.now()) == 0
        services.pause_finish(learner=learner, today=today)
        assert all(exercises_on(read_only_get(api)).values())


def test_learning_more_binds_the_new_exercise_cards_at_once(api, learner, deck):
    LearnerProfile.objects.filter(user=learner).update(new_cards_per_day=1)
    learner.refresh_from_db()
    with time_machine.travel(DAY2, tick=False):
        services.enroll(learner=learner, deck=deck, at=timezone.now())
        response = api.post(f"/api/v1/decks/{deck.slug}/learn-more/", {"count": 3}, format="json")
        assert response.status_code == 200, response.content
        page = read_only_get(api)
    assert len(exercises_on(page)) == 2 and all(exercises_on(page).values())


def test_a_run_binds_at_most_its_budget_today_first_and_the_next_runs_go_on(
    learner, other_learner, deck
):
    enrol(learner, deck)
    enrol(other_learner, deck)
    ExerciseBinding.objects.all().delete()
    today = DAY2.date()
    assert exercises_bind_ahead(at=DAY2, budget=4) == 6  # a learner is bound whole
    assert set(ExerciseBinding.objects.values_list("study_day", flat=True)) == {today}
    assert exercises_bind_ahead(at=DAY2, budget=4) == 6  # the next day's, for both
    assert exercises_bind_ahead(at=DAY2, budget=4) == 0
    assert ExerciseBinding.objects.filter(study_day=today + dt.timedelta(days=1)).count() == 6
