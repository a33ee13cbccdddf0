"""Learner controls through the API: undo, suspend, bury, leeches, reports and pause."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
import time_machine
from django.db import connection

from cards import services
from cards.models import Card, Deck, LearnerProfile, Report, ReviewLog, ReviewState
from cards.services.reminders import reminder_pass_here

from .conftest import START

pytestmark = pytest.mark.django_db
MISSING = object()
DAY1 = START + dt.timedelta(days=1)  # Tuesday 2026-03-03, the enrolled cards are due


def enroll(api, slug="attention"):
    assert api.post(f"/api/v1/decks/{slug}/enroll/").status_code == 200


def due_ids(api) -> list[int]:
    return [item["card"]["id"] for item in api.get("/api/v1/reviews/due/").json()["results"]]


def review(api, card_id, result="pass"):
    response = api.post("/api/v1/reviews/", {"card": card_id, "result": result}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def first_card(deck):
    return Card.objects.filter(deck=deck).order_by("id").first()


# --- Undo --------------------------------------------------------------------------


def test_undo_puts_the_state_back_and_appends_a_compensating_entry(api, deck, first_card):
    with time_machine.travel(START, tick=False) as traveller:
        enroll(api)
        traveller.move_to(DAY1)
        before = api.get("/api/v1/stats/").json()
        done = review(api, first_card.id, "pass")
        assert first_card.id not in due_ids(api)

        undo = api.post(f"/api/v1/reviews/{done['id']}/undo/")
        assert undo.status_code == 200, undo.content
        assert undo.json() == {
            "card": first_card.id,
            "step": 0,
            "interval_days": 1,
            "due_on": "2026-03-03",
            "retrievability": None,
        }
        assert first_card.id in due_ids(api)
        # Append-only: the review stays, an entry cancels it.
        logs = list(ReviewLog.objects.filter(card=first_card).order_by("id"))
        assert len(logs) == 2 and logs[1].undo_of_id == logs[0].pk
        log = api.get(f"/api/v1/reviews/?card={first_card.id}").json()["results"]
        assert [entry["undo_of"] for entry in log] == [done["id"], None]
        after = api.get("/api/v1/stats/").json()
        assert after["reviewed_today"] == before["reviewed_today"] == 0
        assert after["due_today"] == before["due_today"]
        assert after["streak_days"] == 0

        # Twice: 409. Reviewing again and undoing that one works.
        again = api.post(f"/api/v1/reviews/{done['id']}/undo/")
        assert again.status_code == 409 and "already" in again.json()["detail"]
        second = review(api, first_card.id, "fail")
        assert api.post(f"/api/v1/reviews/{second['id']}/undo/").status_code == 200


def test_undo_refuses_an_older_review_and_yesterdays(api, deck, first_card):
    with time_machine.travel(START, tick=False) as traveller:
        enroll(api)
        traveller.move_to(DAY1)
        old = review(api, first_card.id, "fail")  # due again tomorrow
        traveller.move_to(DAY1 + dt.timedelta(days=1))
        response = api.post(f"/api/v1/reviews/{old['id']}/undo/")
        assert response.status_code == 409
        assert "current study day" in response.json()["detail"]
        newer = review(api, first_card.id, "pass")
        # The same day, a second review of another kind: the older one of the card is refused.
        ReviewLog.objects.filter(pk=old["id"]).update(study_day=newer["study_day"])
        response = api.post(f"/api/v1/reviews/{old['id']}/undo/")
        assert response.status_code == 409 and "latest" in response.json()["detail"]
        assert ReviewState.objects.get(card=first_card).step == 1


def test_undo_of_another_learners_review_is_404(api, other_api, deck, first_card):
    with time_machine.travel(START, tick=False) as traveller:
        enroll(api)
        traveller.move_to(DAY1)
        done = review(api, first_card.id)
        assert other_api.post(f"/api/v1/reviews/{done['id']}/undo/").status_code == 404
        assert api.post("/api/v1/reviews/999999999999999999999/undo/").status_code == 404
        assert ReviewLog.objects.count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_undos_move_the_card_back_once(learner, deck, first_card):
    with time_machine.travel(DAY1, tick=False):
        services.enroll(learner=learner, deck=deck, at=START)
        log = services.review_record(learner=learner, card=first_card, result="pass", at=DAY1)
        barrier = threading.Barrier(2)
        outcomes = []

        def undo():
            try:
                barrier.wait()
                services.review_undo(learner=learner, review_id=log.pk, at=DAY1)
                outcomes.append("ok")
            except services.UndoRefused:
                outcomes.append("409")
            finally:
                connection.close()

        threads = [threading.Thread(target=undo) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sorted(outcomes) == ["409", "ok"]
    assert ReviewLog.objects.filter(undo_of=log).count() == 1
    assert ReviewState.objects.get(card=first_card).step == 0


# --- Suspend and bury -----------------------------------------------------------------


def test_suspend_leaves_queue_and_forecast_and_resume_brings_it_back(api, deck, first_card):
    with time_machine.travel(START, tick=False) as traveller:
        enroll(api)
        traveller.move_to(DAY1)
        response = api.post(f"/api/v1/cards/{first_card.id}/suspend/")
        assert response.status_code == 200, response.content
        assert response.json()["suspended"] is True
        assert first_card.id not in due_ids(api)
        stats = api.get("/api/v1/stats/").json()
        assert stats["due_today"] == 3
        assert sum(day["count"] for day in stats["forecast"]) == 3
        state = ReviewState.objects.get(card=first_card)
        assert (state.step, state.due_on) == (0, dt.date(2026, 3, 3))

        assert api.delete(f"/api/v1/cards/{first_card.id}/suspend/").status_code == 204
        assert first_card.id in due_ids(api)


def test_bury_is_for_today_only(api, deck, first_card):
    with time_machine.travel(START, tick=False) as traveller:
        enroll(api)
        traveller.move_to(DAY1)
        response = api.post(f"/api/v1/cards/{first_card.id}/bury/")
        assert response.status_code == 200
        assert response.json()["buried_on"] == "2026-03-03"
        assert first_card.id not in due_ids(api)
        traveller.move_to(DAY1 + dt.timedelta(days=1))
        assert first_card.id in due_ids(api)
        assert ReviewState.objects.get(card=first_card).step == 0


def test_controls_on_cards_not_on_your_ladder_are_404(api, other_api, deck, first_card):
    enroll(api)
    for method, path in [
        ("post", "suspend"),
        ("delete", "suspend"),
        ("post", "bury"),
    ]:
        response = getattr(other_api, method)(f"/api/v1/cards/{first_card.id}/{path}/")
        assert response.status_code == 404, (method, path)
    assert api.post("/api/v1/cards/99999999/bury/").status_code == 404
    assert not ReviewState.objects.filter(suspended=True).exists()


@pytest.mark.parametrize("card_id", [str(2**63), "9" * 40])
def test_controls_on_an_id_no_card_can_have_are_404_with_the_reason(api, deck, card_id):
    enroll(api)
    for method, path in [("post", "suspend"), ("delete", "suspend"), ("post", "bury")]:
        response = getattr(api, method)(f"/api/v1/cards/{card_id}/{path}/")
        assert response.status_code == 404, (method, path)
        assert response.json() == {
            "detail": "No such card on your ladder (unknown, inactive, or deck not enrolled)."
        }
    assert not ReviewState.objects.filter(suspended=True).exists()
    assert not ReviewState.objects.exclude(buried_on=None).exists()


# --- Leeches -------------------------------------------------------------------------


def test_a_card_failed_eight_times_is_a_leech_counted_net_of_undos(api, deck, first_card, settings):
    settings.STUDY_LEECH_LAPSES = 3
    with time_machine.travel(START, tick=False) as traveller:
        enroll(api)
        last = None
        for day in range(1, 4):
            traveller.move_to(START + dt.timedelta(days=day))
            last = review(api, first_card.id, "fail")
        traveller.move_to(START + dt.timedelta(days=4))
        items = api.get("/api/v1/reviews/due/").json()["results"]
        leech = {item["card"]["id"]: item["leech"] for item in items}
        assert leech[first_card.id] is True
        assert sum(leech.values()) == 1
        stats = api.get("/api/v1/stats/").json()
        assert (stats["leech"], stats["leech_count"], stats["leech_cards"]) == (
            True,
            1,
            [first_card.id],
        )
        # Undo the third fail (on its own day): no longer a leech.
        traveller.move_to(START + dt.timedelta(days=3))
        assert api.post(f"/api/v1/reviews/{last['id']}/undo/").status_code == 200
        items = api.get("/api/v1/reviews/due/").json()["results"]
        assert not any(item["leech"] for item in items)
        assert api.get("/api/v1/stats/").json()["leech_count"] == 0


# --- Reports -------------------------------------------------------------------------


def test_reports_are_created_listed_and_private(api, other_api, deck, first_card):
    response = api.post(
        "/api/v1/reports/", {"card": first_card.id, "text": "The answer is wrong"}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert {k: body[k] for k in ("card", "exercise", "text", "resolved")} == {
        "card": first_card.id,
        "exercise": None,
        "text": "The answer is wrong",
        "resolved": False,
    }
    mine = api.get("/api/v1/reports/").json()
    assert mine["count"] == 1 and mine["results"][0]["id"] == body["id"]
    assert other_api.get("/api/v1/reports/").json()["count"] == 0


@pytest.mark.parametrize(
    "payload, field",
    [
        ({"card": MISSING, "text": "x"}, "card"),
        ({"card": "1", "text": "x"}, "card"),
        ({"card": 99999, "text": "x"}, "card"),
        ({"card": None, "text": "x"}, "card"),
        ({"text": ""}, "text"),
        ({"text": "x" * 2001}, "text"),
        ({"text": "x", "exercise": 99999}, "exercise"),
    ],
)
def test_bad_reports_are_400_naming_the_field(api, first_card, payload, field):
    payload = {"card": first_card.id, **payload}
    payload = {key: value for key, value in payload.items() if value is not MISSING}
    response = api.post("/api/v1/reports/", payload, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not Report.objects.exists()


def test_a_report_may_name_only_your_own_exercise(api, other_api, first_card):
    exercise = other_api.post(
        "/api/v1/exercises/", {"kind": "attention", "params": {}}, format="json"
    ).json()
    response = api.post(
        "/api/v1/reports/",
        {"card": first_card.id, "exercise": exercise["id"], "text": "odd"},
        format="json",
    )
    assert response.status_code == 400 and "exercise" in response.json()
    mine = api.post("/api/v1/exercises/", {"kind": "attention", "params": {}}, format="json")
    response = api.post(
        "/api/v1/reports/",
        {"card": first_card.id, "exercise": mine.json()["id"], "text": "odd"},
        format="json",
    )
    assert response.status_code == 201 and response.json()["exercise"] == mine.json()["id"]


# --- Pause ---------------------------------------------------------------------------


def test_pause_empties_the_queue_keeps_the_streak_and_moves_due_dates(api, deck, first_card):
    with time_machine.travel(START, tick=False) as traveller:
        enroll(api)
        traveller.move_to(DAY1)
        review(api, first_card.id, "pass")  # due 2026-03-06; others due (overdue from today)
        streak = api.get("/api/v1/stats/").json()["streak_days"]
        assert streak == 1
        response = api.post("/api/v1/me/pause/", {"start": "2026-03-04", "days": 5}, format="json")
        assert response.status_code == 200, response.content
        assert response.json() == {"start": "2026-03-04", "days": 5}
        due = dict(ReviewState.objects.values_list("card_id", "due_on"))
        assert due[first_card.id] == dt.date(2026, 3, 11)
        assert sorted(set(due.values())) == [dt.date(2026, 3, 8), dt.date(2026, 3, 11)]

        # Paused: nothing due, overdue included; the dashboard numbers agree.
        traveller.move_to(START + dt.timedelta(days=4))
        assert api.get("/api/v1/reviews/due/").json()["count"] == 0
        stats = api.get("/api/v1/stats/").json()
        assert stats["due_today"] == 0 and stats["paused"] is True
        # Back after the pause: the overdue cards and the streak are waiting.
        traveller.move_to(dt.datetime(2026, 3, 9, 12, tzinfo=dt.UTC))
        assert len(due_ids(api)) == 3
        stats = api.get("/api/v1/stats/").json()
        assert stats["streak_days"] == 1 and stats["paused"] is False
        assert (
            api.post(
                "/api/v1/me/pause/", {"start": "2026-03-09", "days": 1}, format="json"
            ).status_code
            == 200
        )


def test_ending_a_pause_early_shifts_back_by_the_days_not_used(api, deck, first_card):
    with time_machine.travel(START, tick=False) as traveller:
        enroll(api)  # due 2026-03-03
        api.post("/api/v1/me/pause/", {"start": "2026-03-02", "days": 10}, format="json")
        assert ReviewState.objects.filter(due_on=dt.date(2026, 3, 13)).count() == 4
        conflict = api.post("/api/v1/me/pause/", {"start": "2026-03-20", "days": 2}, format="json")
        assert conflict.status_code == 409
        traveller.move_to(START + dt.timedelta(days=3))
        response = api.delete("/api/v1/me/pause/")
        assert response.status_code == 200
        assert response.json() == {"start": "2026-03-02", "days": 3}
        assert ReviewState.objects.filter(due_on=dt.date(2026, 3, 6)).count() == 4
        assert api.delete("/api/v1/me/pause/").status_code == 409
        profile = LearnerProfile.objects.get(user__username="alice")
        assert (profile.pause_start, profile.pause_days) == (dt.date(2026, 3, 2), 3)


@pytest.mark.parametrize(
    "payload, field",
    [
        ({"start": "2026-03-01", "days": 3}, "start"),
        ({"start": "not a date", "days": 3}, "start"),
        ({"start": "2026-03-02", "days": 0}, "days"),
        ({"start": "2026-03-02", "days": 91}, "days"),
        ({"start": "2026-03-02", "days": "3"}, "days"),
        ({"days": 3}, "start"),
    ],
)
def test_bad_pauses_are_400_and_change_nothing(api, deck, payload, field):
    with time_machine.travel(START, tick=False):
        enroll(api)
        response = api.post("/api/v1/me/pause/", payload, format="json")
        assert response.status_code == 400
        assert field in response.json()
        assert set(ReviewState.objects.values_list("due_on", flat=True)) == {dt.date(2026, 3, 3)}


def test_no_reminders_during_a_pause(api, learner, deck):
    learner.email = "alice@example.org"
    learner.save()
    # Reminders go only to a confirmed address.
    LearnerProfile.objects.update_or_create(
        user=learner, defaults={"confirmed_email": learner.email}
    )
    with time_machine.travel(START, tick=False):
        enroll(api)
        api.post("/api/v1/me/pause/", {"start": "2026-03-02", "days": 3}, format="json")
    ReviewState.objects.update(due_on=dt.date(2026, 3, 1))  # due all along
    for day in (2, 3, 4):
        at = dt.datetime(2026, 3, day, 10, tzinfo=dt.UTC)
        assert reminder_pass_here(at=at) == 0
    assert reminder_pass_here(at=dt.datetime(2026, 3, 5, 10, tzinfo=dt.UTC)) == 1


def test_controls_need_credentials(anon_api):
    for method, path in [
        ("post", "/api/v1/reviews/1/undo/"),
        ("post", "/api/v1/cards/1/suspend/"),
        ("post", "/api/v1/cards/1/bury/"),
        ("get", "/api/v1/reports/"),
        ("post", "/api/v1/me/pause/"),
        ("get", "/api/v1/me/reviews.csv"),
    ]:
        assert getattr(anon_api, method)(path).status_code == 401, path


def test_undoing_an_exercise_review_hands_out_a_fresh_exercise(api, learner):
    from exercises.models import Exercise

    deck = Deck.objects.create(slug="ex", title="Ex")
    card = Card.objects.create(
        deck=deck,
        kind="exercise",
        prompt="By hand",
        exercise={"kind": "attention", "params": {"n": 2, "d_k": 2, "d_v": 2}},
    )
    with time_machine.travel(START, tick=False) as traveller:
        enroll(api, "ex")
        traveller.move_to(DAY1)
        item = api.get("/api/v1/reviews/due/").json()["results"][0]
        exercise = Exercise.objects.get(pk=item["exercise"]["id"])
        answers = {ask["name"]: exercise.solution[ask["name"]] for ask in exercise.asks}
        submitted = api.post(
            f"/api/v1/exercises/{exercise.pk}/submit/", {"answers": answers}, format="json"
        ).json()
        review_id = submitted["review"]["id"]
        assert api.get("/api/v1/reviews/due/").json()["count"] == 0
        undo = api.post(f"/api/v1/reviews/{review_id}/undo/")
        assert undo.status_code == 200 and undo.json()["step"] == 0
        again = api.get("/api/v1/reviews/due/").json()["results"]
        assert [i["card"]["id"] for i in again] == [card.pk]
        fresh = again[0]["exercise"]
        assert fresh["id"] != exercise.pk and fresh["attempts"]["used"] == 0
        # Its first submission records the review again.
        fresh_ex = Exercise.objects.get(pk=fresh["id"])
        answers = {ask["name"]: fresh_ex.solution[ask["name"]] for ask in fresh_ex.asks}
        result = api.post(
            f"/api/v1/exercises/{fresh_ex.pk}/submit/", {"answers": answers}, format="json"
        ).json()
        assert result["review"]["result"] == "pass"
