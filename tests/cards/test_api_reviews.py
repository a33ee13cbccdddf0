"""The review API through the public contract, travelling in time."""

import datetime as dt

import pytest
import time_machine

from cards.models import Card, ReviewLog, ReviewState

from .conftest import START

pytestmark = pytest.mark.django_db


def enroll(api, slug="attention"):
    response = api.post(f"/api/v1/decks/{slug}/enroll/")
    assert response.status_code == 200, response.content
    return response.json()


def test_requests_without_credentials_get_401(anon_api, deck):
    for path in ["/api/v1/me/", "/api/v1/decks/", "/api/v1/reviews/due/", "/api/v1/stats/"]:
        response = anon_api.get(path)
        assert response.status_code == 401, path
        assert "detail" in response.json()


def test_golden_sequence_through_the_api(api, deck):
    with time_machine.travel(START, tick=False) as traveller:
        body = enroll(api)
        assert body == {
            "deck": "attention",
            "scheduled": 4,
            "waiting": 0,
            "first_due_on": "2026-03-03",
        }
        assert api.get("/api/v1/reviews/due/").json()["count"] == 0

        card = Card.objects.filter(deck=deck).order_by("id").first()
        expected_gaps = [3, 7, 14, 30, 30]
        traveller.move_to(START + dt.timedelta(days=1))
        for gap in expected_gaps:
            due = api.get("/api/v1/reviews/due/").json()
            assert card.id in [item["card"]["id"] for item in due["results"]]
            answer = api.post(
                "/api/v1/reviews/", {"card": card.id, "result": "pass"}, format="json"
            )
            assert answer.status_code == 201, answer.content
            body = answer.json()
            today = dt.date.fromisoformat(due["today"])
            assert body["interval_days"] == gap
            assert dt.date.fromisoformat(body["due_on"]) == today + dt.timedelta(days=gap)
            next_due = dt.date.fromisoformat(body["due_on"])
            traveller.move_to(dt.datetime.combine(next_due, dt.time(12), tzinfo=dt.UTC))

        # A miss at the top returns the card to one day.
        miss = api.post(
            "/api/v1/reviews/", {"card": card.id, "result": "fail"}, format="json"
        ).json()
        assert (miss["step_before"], miss["step"], miss["interval_days"]) == (4, 0, 1)


def test_due_queue_is_oldest_first_and_counts_everything(api, deck, learner):
    with time_machine.travel(START, tick=False):
        enroll(api)
    cards = list(Card.objects.filter(deck=deck).order_by("id"))
    ReviewState.objects.filter(learner=learner, card=cards[2]).update(due_on=dt.date(2026, 2, 1))
    with time_machine.travel(START + dt.timedelta(days=3), tick=False):
        due = api.get("/api/v1/reviews/due/?page_size=2").json()
    assert due["today"] == "2026-03-05"
    assert due["count"] == 4
    assert len(due["results"]) == 2
    assert due["results"][0]["card"]["id"] == cards[2].id
    first = due["results"][0]
    assert set(first) >= {"card", "step", "interval_days", "due_on"}
    assert set(first["card"]) >= {
        "id",
        "deck",
        "kind",
        "prompt",
        "answer",
        "tags",
        "exercise",
        "updated_at",
    }


def test_review_errors_in_contract_order(api, deck, other_deck, learner):
    with time_machine.travel(START, tick=False):
        enroll(api)
        card = Card.objects.filter(deck=deck).first()
        # malformed bodies and results are 400 and name the field
        for body, field in [
            ({"card": card.id, "result": "maybe"}, "result"),
            ({"card": "abc", "result": "pass"}, "card"),
            ({"card": True, "result": "pass"}, "card"),
            ({"result": "pass"}, "card"),
            ({"card": card.id}, "result"),
        ]:
            response = api.post("/api/v1/reviews/", body, format="json")
            assert response.status_code == 400, body
            assert field in response.json()
        bad_json = api.post("/api/v1/reviews/", "{not json", content_type="application/json")
        assert bad_json.status_code == 400
        form = api.post("/api/v1/reviews/", {"card": card.id, "result": "pass"})  # multipart
        assert form.status_code == 415
        # a card not scheduled for this learner is 404
        foreign = other_deck.cards.first()
        assert (
            api.post(
                "/api/v1/reviews/", {"card": foreign.id, "result": "pass"}, format="json"
            ).status_code
            == 404
        )
        assert (
            api.post(
                "/api/v1/reviews/", {"card": 99999999, "result": "pass"}, format="json"
            ).status_code
            == 404
        )
        # not due yet is 409 with the due date
        response = api.post("/api/v1/reviews/", {"card": card.id, "result": "pass"}, format="json")
        assert response.status_code == 409
        assert response.json()["due_on"] == "2026-03-03"
    assert not ReviewLog.objects.exists()
    assert set(ReviewState.objects.filter(learner=learner).values_list("step", flat=True)) == {0}


def test_second_submit_for_a_card_no_longer_due_is_409(api, deck, learner):
    with time_machine.travel(START, tick=False):
        enroll(api)
    card = deck.cards.first()
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        assert (
            api.post(
                "/api/v1/reviews/", {"card": card.id, "result": "pass"}, format="json"
            ).status_code
            == 201
        )
        again = api.post("/api/v1/reviews/", {"card": card.id, "result": "fail"}, format="json")
    assert again.status_code == 409
    state = ReviewState.objects.get(learner=learner, card=card)
    assert (state.step, state.due_on) == (1, dt.date(2026, 3, 6))
    assert ReviewLog.objects.count() == 1


def test_idempotency_key_replays_conflicts_and_is_per_learner(api, other_api, deck, learner):
    with time_machine.travel(START, tick=False):
        enroll(api)
        enroll(other_api)
    card = deck.cards.first()
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        body = {"card": card.id, "result": "pass"}
        first = api.post("/api/v1/reviews/", body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
        replay = api.post("/api/v1/reviews/", body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
        assert first.status_code == replay.status_code == 201
        assert first.json() == replay.json()
        different = api.post(
            "/api/v1/reviews/",
            {"card": card.id, "result": "fail"},
            format="json",
            HTTP_IDEMPOTENCY_KEY="k-1",
        )
        assert different.status_code == 422
        # The same key from another learner is a different key.
        theirs = other_api.post("/api/v1/reviews/", body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
        assert theirs.status_code == 201
        assert theirs.json()["id"] != first.json()["id"]
        too_long = api.post("/api/v1/reviews/", body, format="json", HTTP_IDEMPOTENCY_KEY="x" * 256)
        assert too_long.status_code == 400
    assert ReviewLog.objects.filter(learner=learner).count() == 1
    assert ReviewState.objects.get(learner=learner, card=card).step == 1


def test_idempotency_key_in_flight_is_409(api, deck, learner):
    from cards.models import IdempotencyKey
    from cards.services import request_fingerprint

    with time_machine.travel(START, tick=False):
        enroll(api)
    card = deck.cards.first()
    body = {"card": card.id, "result": "pass"}
    IdempotencyKey.objects.create(
        learner=learner,
        key="busy",
        request_hash=request_fingerprint(method="POST", path="/api/v1/reviews/", body=body),
    )
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        response = api.post("/api/v1/reviews/", body, format="json", HTTP_IDEMPOTENCY_KEY="busy")
    assert response.status_code == 409
    assert not ReviewLog.objects.exists()


def test_failed_request_with_a_key_can_be_retried(api, deck):
    with time_machine.travel(START, tick=False):
        enroll(api)
        card = deck.cards.first()
        body = {"card": card.id, "result": "pass"}
        early = api.post("/api/v1/reviews/", body, format="json", HTTP_IDEMPOTENCY_KEY="retry")
        assert early.status_code == 409
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        later = api.post("/api/v1/reviews/", body, format="json", HTTP_IDEMPOTENCY_KEY="retry")
        assert later.status_code == 201


def test_history_is_private_newest_first_and_filterable(api, other_api, deck):
    with time_machine.travel(START, tick=False):
        enroll(api)
    first, second = list(deck.cards.order_by("id"))[:2]
    with time_machine.travel(START + dt.timedelta(days=1), tick=True):
        api.post("/api/v1/reviews/", {"card": first.id, "result": "pass"}, format="json")
        api.post("/api/v1/reviews/", {"card": second.id, "result": "fail"}, format="json")
    history = api.get("/api/v1/reviews/").json()
    assert history["count"] == 2
    assert [r["card"] for r in history["results"]] == [second.id, first.id]
    only = api.get(f"/api/v1/reviews/?card={first.id}").json()
    assert [r["card"] for r in only["results"]] == [first.id]
    assert other_api.get("/api/v1/reviews/").json()["count"] == 0
    assert api.get("/api/v1/reviews/?card=abc").status_code == 400
    assert api.get("/api/v1/reviews/?page_size=0").status_code == 400
    assert api.get("/api/v1/reviews/?page_size=101").status_code == 400
    assert api.get("/api/v1/reviews/?page=99").status_code == 404


def test_unenroll_removes_cards_from_the_queue_but_keeps_history(api, deck, learner):
    with time_machine.travel(START, tick=False):
        enroll(api)
    card = deck.cards.first()
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        api.post("/api/v1/reviews/", {"card": card.id, "result": "fail"}, format="json")
        assert api.delete("/api/v1/decks/attention/enroll/").status_code == 204
        assert api.get("/api/v1/reviews/due/").json()["count"] == 0
        assert api.get("/api/v1/reviews/").json()["count"] == 1
        # Coming back restores the same progress: nothing newly scheduled.
        again = enroll(api)
        assert again["scheduled"] == 0
        assert api.get("/api/v1/reviews/due/").json()["count"] == 3
    assert ReviewState.objects.get(learner=learner, card=card).due_on == dt.date(2026, 3, 4)


def test_deactivated_and_deleted_cards_leave_the_queue_but_keep_the_log(
    api, staff_api, deck, learner
):
    with time_machine.travel(START, tick=False):
        enroll(api)
    first, second = list(deck.cards.order_by("id"))[:2]
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        api.post("/api/v1/reviews/", {"card": first.id, "result": "fail"}, format="json")
        assert (
            staff_api.patch(
                f"/api/v1/cards/{second.id}/", {"active": False}, format="json"
            ).status_code
            == 200
        )
        assert staff_api.delete(f"/api/v1/cards/{first.id}/").status_code == 204
        due_ids = [i["card"]["id"] for i in api.get("/api/v1/reviews/due/").json()["results"]]
    assert first.id not in due_ids and second.id not in due_ids
    assert ReviewLog.objects.filter(learner=learner, card_id=first.id).count() == 1
    assert api.get(f"/api/v1/reviews/?card={first.id}").json()["count"] == 1


def test_editing_a_card_never_resets_progress(api, staff_api, deck, learner):
    with time_machine.travel(START, tick=False):
        enroll(api)
    card = deck.cards.first()
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        api.post("/api/v1/reviews/", {"card": card.id, "result": "pass"}, format="json")
    response = staff_api.patch(
        f"/api/v1/cards/{card.id}/", {"prompt": "New words", "tags": ["shapes"]}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["tags"] == ["shapes"]
    state = ReviewState.objects.get(learner=learner, card=card)
    assert (state.step, state.due_on) == (1, dt.date(2026, 3, 6))


@pytest.mark.parametrize("path", ["/api/v1/reviews/", "/api/v1/reviews/due/", "/api/v1/cards/"])
def test_absurdly_long_page_numbers_are_4xx_not_500(api, deck, path):
    assert api.get(f"{path}?page={'9' * 5000}").status_code == 404  # past the last page
    assert api.get(f"{path}?page=x{'9' * 5000}").status_code == 400
    assert api.get(f"{path}?page_size={'9' * 5000}").status_code == 400


def test_absurdly_long_exercise_ids_are_404(api):
    assert api.get(f"/api/v1/exercises/{'9' * 5000}/").status_code == 404
    response = api.post(f"/api/v1/exercises/{'9' * 5000}/submit/", {"answers": {}}, format="json")
    assert response.status_code == 404
