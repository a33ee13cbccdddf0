"""Exercise cards on the ladder: a fresh, server-seeded exercise per due review."""

import datetime as dt

import numpy as np
import pytest
import time_machine

from cards.models import Card, Deck, ExerciseBinding, ReviewLog, ReviewState
from exercises.models import Exercise

pytestmark = pytest.mark.django_db

START = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def exercise_deck(db):
    deck = Deck.objects.create(slug="drills", title="Drills")
    Card.objects.create(
        deck=deck,
        kind="exercise",
        prompt="Compute one head by hand",
        exercise={"kind": "attention", "params": {"seed": 7}},
    )
    return deck


def due_exercise(api):
    due = api.get("/api/v1/reviews/due/").json()
    assert due["count"] == 1
    item = due["results"][0]
    assert item["card"]["kind"] == "exercise"
    return item["exercise"]


def test_due_item_carries_a_bound_exercise_with_a_server_seed(api, exercise_deck, learner):
    with time_machine.travel(START, tick=False):
        api.post("/api/v1/decks/drills/enroll/")
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        first = due_exercise(api)
        again = due_exercise(api)
    assert first["id"] == again["id"]  # the same exercise for the whole study day
    assert {"id", "kind", "params", "inputs", "asks", "tolerance", "attempts", "solved"} <= set(
        first
    )
    assert first["kind"] == "attention"
    # The card's own seed is never used for a review-bound exercise, and its own seed is private.
    assert "seed" not in first["params"]
    assert Exercise.objects.get(pk=first["id"]).seed != 7
    assert ExerciseBinding.objects.filter(learner=learner).count() == 1


def test_first_submission_records_the_review_later_ones_are_practice(api, exercise_deck, learner):
    with time_machine.travel(START, tick=False):
        api.post("/api/v1/decks/drills/enroll/")
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        exercise = due_exercise(api)
        solution = Exercise.objects.get(pk=exercise["id"]).solution
        wrong = {part: (np.asarray(v) + 1.0).tolist() for part, v in solution.items()}
        first = api.post(
            f"/api/v1/exercises/{exercise['id']}/submit/", {"answers": wrong}, format="json"
        )
        assert first.status_code == 200, first.content
        assert first.json()["correct"] is False
        assert first.json()["review"]["result"] == "fail"
        second = api.post(
            f"/api/v1/exercises/{exercise['id']}/submit/", {"answers": solution}, format="json"
        )
        assert second.json()["correct"] is True and second.json()["review"] is None
        assert api.get("/api/v1/reviews/due/").json()["count"] == 0
    log = ReviewLog.objects.get(learner=learner)
    assert (log.result, log.step_after) == ("fail", 0)
    assert ReviewState.objects.get(learner=learner).due_on == dt.date(2026, 3, 4)


def test_a_correct_first_submission_passes_the_card(api, exercise_deck, learner):
    with time_machine.travel(START, tick=False):
        api.post("/api/v1/decks/drills/enroll/")
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        exercise = due_exercise(api)
        solution = Exercise.objects.get(pk=exercise["id"]).solution
        body = api.post(
            f"/api/v1/exercises/{exercise['id']}/submit/", {"answers": solution}, format="json"
        ).json()
    assert body["correct"] is True and body["review"]["result"] == "pass"
    assert ReviewState.objects.get(learner=learner).step == 1


def test_exercise_cards_cannot_be_reviewed_directly(api, exercise_deck):
    with time_machine.travel(START, tick=False):
        api.post("/api/v1/decks/drills/enroll/")
    card = exercise_deck.cards.get()
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        response = api.post("/api/v1/reviews/", {"card": card.id, "result": "pass"}, format="json")
    assert response.status_code == 400 and "card" in response.json()
    assert not ReviewLog.objects.exists()


def test_a_malformed_first_submission_records_nothing(api, exercise_deck, learner):
    with time_machine.travel(START, tick=False):
        api.post("/api/v1/decks/drills/enroll/")
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        exercise = due_exercise(api)
        bad = api.post(
            f"/api/v1/exercises/{exercise['id']}/submit/",
            {"answers": {"scores": "x"}},
            format="json",
        )
    assert bad.status_code == 400
    assert not ReviewLog.objects.exists()
    assert Exercise.objects.get(pk=exercise["id"]).attempts_used == 0


def test_another_learner_cannot_submit_my_bound_exercise(api, other_api, exercise_deck):
    with time_machine.travel(START, tick=False):
        api.post("/api/v1/decks/drills/enroll/")
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        exercise = due_exercise(api)
        response = other_api.post(
            f"/api/v1/exercises/{exercise['id']}/submit/", {"answers": {}}, format="json"
        )
    assert response.status_code == 404
    assert not ReviewLog.objects.exists()


def test_an_exercise_answered_as_practice_is_replaced_when_its_card_is_due_again(
    api, exercise_deck, learner
):
    with time_machine.travel(START, tick=False):
        api.post("/api/v1/decks/drills/enroll/")
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        first = due_exercise(api)
        api.delete("/api/v1/decks/drills/enroll/")
        solution = Exercise.objects.get(pk=first["id"]).solution
        practice = api.post(
            f"/api/v1/exercises/{first['id']}/submit/", {"answers": solution}, format="json"
        ).json()
        assert practice["review"] is None  # out of the queue: practice only
        api.post("/api/v1/decks/drills/enroll/")
        fresh = due_exercise(api)
        assert fresh["id"] != first["id"]
        body = api.post(
            f"/api/v1/exercises/{fresh['id']}/submit/",
            {"answers": Exercise.objects.get(pk=fresh["id"]).solution},
            format="json",
        ).json()
    assert body["review"]["result"] == "pass"
    assert ReviewLog.objects.filter(learner=learner).count() == 1


def test_a_time_zone_that_no_longer_resolves_falls_back_to_utc(api, learner):
    from cards.models import LearnerProfile

    LearnerProfile.objects.filter(user=learner).update(timezone="Atlantis/Capital")
    with time_machine.travel(START, tick=False):
        response = api.get("/api/v1/reviews/due/")
    assert response.status_code == 200
    assert response.json()["today"] == "2026-03-02"
