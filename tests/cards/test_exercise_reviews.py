"""Exercise cards on the ladder: a fresh, server-seeded exercise per due review."""

import datetime as dt

import numpy as np
import pytest
import time_machine
from django.urls import reverse
from django.utils import timezone

from cards.models import Card, Deck, ExerciseBinding, ReviewLog, ReviewState
from cards.services.due_exercises import exercises_bind_ahead
from exercises.models import Exercise
from exercises.reviews import review_side

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


def test_the_study_core_is_the_review_side_of_exercises(api, exercise_deck, learner):
    side = review_side()
    with time_machine.travel(START, tick=False):
        api.post("/api/v1/decks/drills/enroll/")
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        bound = due_exercise(api)["id"]
    practice = api.post("/api/v1/exercises/", {"kind": "causal", "params": {}}, format="json")
    assert side.bound_card_id(bound) == exercise_deck.cards.get().pk
    assert side.bound_card_id(practice.json()["id"]) is None
    assert side.submit_url(bound) == reverse("exercise-page-submit", args=[bound])
    assert side.submit_url(bound) == f"/exercises/{bound}/submit/"
    assert side.review_page_url() == reverse("review") == "/review/"


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


# --- A card that cannot generate never blocks the queue -------------------------------------


@pytest.fixture
def mixed_deck(db):
    deck = Deck.objects.create(slug="mixed", title="Mixed")
    Card.objects.create(
        deck=deck,
        key="heads",
        kind="exercise",
        prompt="Two heads by hand",
        exercise={"kind": "attention", "params": {"n": 3}},
        position=0,
    )
    Card.objects.create(
        deck=deck, key="shapes", kind="recall", prompt="Shapes?", answer="(n, n)", position=1
    )
    return deck


def _break(card_key: str) -> Card:
    # As after a kind's limits change: the stored parameters are no longer accepted.
    Card.objects.filter(key=card_key).update(exercise={"kind": "attention", "params": {"n": 99}})
    return Card.objects.get(key=card_key)


def test_a_card_that_cannot_generate_is_passed_over_flagged_and_logged_once(
    api, mixed_deck, learner, caplog
):
    broken = _break("heads")
    with time_machine.travel(START, tick=False), caplog.at_level("ERROR"):
        api.post("/api/v1/decks/mixed/enroll/")  # binds tomorrow's exercises: this one fails
    with time_machine.travel(START + dt.timedelta(days=1), tick=False), caplog.at_level("ERROR"):
        exercises_bind_ahead(at=timezone.now())  # the beat tries again, as the day begins
        pages = [api.get("/api/v1/reviews/due/").json() for _ in range(3)]
    for page in pages:
        assert page["count"] == 2
        by_key = {item["card"]["key"]: item for item in page["results"]}
        assert by_key["heads"]["exercise"] is None  # nothing to answer: pass over it
        assert by_key["shapes"]["card"]["kind"] == "recall"
    # The learner goes on with the rest of the queue.
    recall = Card.objects.get(key="shapes")
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        done = api.post("/api/v1/reviews/", {"card": recall.pk, "result": "pass"}, format="json")
    assert done.status_code == 201
    broken.refresh_from_db()
    assert "params.n" in broken.generation_error and "Expected a value" in broken.generation_error
    lines = [r for r in caplog.records if "cannot generate" in r.getMessage()]
    assert len(lines) == 1, [r.getMessage() for r in caplog.records]
    assert str(broken.pk) in lines[0].getMessage()
    assert not Exercise.objects.exists()


def test_the_review_page_passes_over_it_and_logs_nothing_more(
    client, api, mixed_deck, learner, caplog
):
    _break("heads")
    client.force_login(learner)
    with time_machine.travel(START, tick=False), caplog.at_level("ERROR"):
        api.post("/api/v1/decks/mixed/enroll/")
    with time_machine.travel(START + dt.timedelta(days=1), tick=False), caplog.at_level("ERROR"):
        api.get("/api/v1/reviews/due/")
        pages = [client.get("/review/") for _ in range(2)]
    for page in pages:
        assert page.status_code == 200
        assert page.context["card"].key == "shapes"
        assert page.context["skipped"] == 1
    assert len([r for r in caplog.records if "cannot generate" in r.getMessage()]) == 1


def test_a_card_that_generates_again_loses_its_flag(api, mixed_deck, learner):
    _break("heads")
    with time_machine.travel(START, tick=False):
        api.post("/api/v1/decks/mixed/enroll/")
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        assert Card.objects.get(key="heads").generation_error
        Card.objects.filter(key="heads").update(exercise={"kind": "attention", "params": {"n": 3}})
        exercises_bind_ahead(at=timezone.now())  # the beat's next pass binds it
        page = api.get("/api/v1/reviews/due/").json()
    by_key = {item["card"]["key"]: item for item in page["results"]}
    assert by_key["heads"]["exercise"]["kind"] == "attention"
    assert Card.objects.get(key="heads").generation_error == ""


def test_staff_see_the_flag_in_the_admin_and_saving_the_fix_clears_it(
    client, api, staff, mixed_deck, learner
):
    broken = _break("heads")
    with time_machine.travel(START, tick=False):
        api.post("/api/v1/decks/mixed/enroll/")
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    changelist = reverse("admin:cards_card_changelist")
    flagged = client.get(changelist, {"generates": "no"})
    assert list(flagged.context["cl"].queryset) == [broken]
    fine = client.get(changelist, {"generates": "yes"})
    assert broken not in fine.context["cl"].queryset
    assert "Generates" in client.get(changelist).content.decode()
    page = client.get(reverse("admin:cards_card_change", args=[broken.pk])).content.decode()
    assert "Learners pass over this card" in page and "params.n" in page

    saved = client.post(
        reverse("admin:cards_card_change", args=[broken.pk]),
        {
            "deck": mixed_deck.pk,
            "key": "heads",
            "kind": "exercise",
            "position": 0,
            "is_active": "on",
            "prompt": broken.prompt,
            "answer": "",
            "exercise": '{"kind": "attention", "params": {"n": 3}}',
        },
    )
    assert saved.status_code == 302
    assert Card.objects.get(pk=broken.pk).generation_error == ""


def test_fixing_the_card_through_the_api_or_a_deck_file_clears_the_flag(
    api, staff_api, mixed_deck, learner
):
    from cards.decks import deck_export, deck_import

    card = _break("heads")
    with time_machine.travel(START, tick=False):
        api.post("/api/v1/decks/mixed/enroll/")
    assert Card.objects.get(pk=card.pk).generation_error
    fixed = staff_api.patch(
        f"/api/v1/cards/{card.pk}/",
        {"exercise": {"kind": "attention", "params": {"n": 4}}},
        format="json",
    )
    assert fixed.status_code == 200, fixed.content
    assert Card.objects.get(pk=card.pk).generation_error == ""

    Card.objects.filter(pk=card.pk).update(generation_error="params.n: out of range")
    document = deck_export(deck=mixed_deck)
    assert deck_import(data=document).updated == 1
    assert Card.objects.get(pk=card.pk).generation_error == ""
