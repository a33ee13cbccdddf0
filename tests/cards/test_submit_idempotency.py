"""``review_submit``: a review recorded at most once per Idempotency-Key, on its own and
through ``POST /api/v1/reviews/``."""

from __future__ import annotations

import datetime as dt

import pytest
import time_machine
from django.utils import timezone

from cards import services
from cards.models import Card, Deck, IdempotencyKey, ReviewLog, ReviewState
from cards.services import reviews

pytestmark = pytest.mark.django_db

PATH = "/api/v1/reviews/"
TODAY = dt.date(2026, 3, 10)
AT = dt.datetime(2026, 3, 10, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def cards(learner):
    deck = Deck.objects.create(slug="keys", title="Keys")
    recall = Card.objects.create(deck=deck, kind="recall", prompt="P", answer="A", position=0)
    exercise = Card.objects.create(
        deck=deck,
        kind="exercise",
        prompt="E",
        exercise={"kind": "attention", "params": {"n": 2}},
        position=1,
    )
    services.enroll(learner=learner, deck=deck, at=AT - dt.timedelta(days=3))
    ReviewState.objects.filter(learner=learner).update(due_on=TODAY)
    return recall, exercise


class Presenter:
    """Stands in for the response serializer, counting its calls."""

    def __init__(self):
        self.logs: list[ReviewLog] = []

    def __call__(self, log: ReviewLog) -> dict:
        self.logs.append(log)
        return {"id": log.pk, "step": log.step_after}


def submit(learner, card, result="pass", *, key="", present=None, at=AT):
    return reviews.review_submit(
        learner=learner,
        card=card.pk,
        result=result,
        at=at,
        present=present or Presenter(),
        idempotency_key=key,
        path=PATH,
    )


def fingerprint(card, result="pass") -> str:
    return reviews.request_fingerprint(
        method="POST", path=PATH, body={"card": card.pk, "result": result}
    )


def test_without_a_key_it_records_and_keeps_no_claim(learner, cards):
    present = Presenter()
    answer = submit(learner, cards[0], present=present)
    log = ReviewLog.objects.get(learner=learner)
    assert answer == reviews.Recorded({"id": log.pk, "step": 1})
    assert present.logs == [log] and log.idempotency_key == ""
    assert not IdempotencyKey.objects.exists()


def test_with_a_key_the_first_answer_is_stored_and_replayed(learner, cards):
    present = Presenter()
    first = submit(learner, cards[0], key="k", present=present)
    again = submit(learner, cards[0], key="k", present=present)
    log = ReviewLog.objects.get(learner=learner)
    assert not first.replayed
    assert (again.body, again.replayed) == (first.body, True)
    assert present.logs == [log] and log.idempotency_key == "k"
    stored = IdempotencyKey.objects.get(learner=learner, key="k")
    assert stored.status == IdempotencyKey.Status.DONE
    assert (stored.response_status, stored.response_body) == (201, first.body)
    assert stored.request_hash == fingerprint(cards[0])


def test_a_different_body_under_the_key_is_a_conflict_not_in_flight(learner, cards):
    submit(learner, cards[0], key="k")
    with pytest.raises(services.IdempotencyConflict) as refused:
        submit(learner, cards[0], "fail", key="k")
    assert refused.value.in_flight is False
    assert ReviewLog.objects.count() == 1


def test_a_claim_in_flight_is_a_conflict_in_flight(learner, cards):
    IdempotencyKey.objects.create(learner=learner, key="busy", request_hash=fingerprint(cards[0]))
    with pytest.raises(services.IdempotencyConflict) as refused:
        submit(learner, cards[0], key="busy", at=timezone.now())
    assert refused.value.in_flight is True
    assert not ReviewLog.objects.exists()


@pytest.mark.parametrize(
    ("which", "error"),
    [
        (0, services.NotDue),  # due tomorrow
        (1, services.ExerciseCardReview),
    ],
)
def test_a_refused_review_lets_the_claim_go(learner, cards, which, error):
    ReviewState.objects.filter(learner=learner, card=cards[0]).update(
        due_on=TODAY + dt.timedelta(days=1)
    )
    with pytest.raises(error):
        submit(learner, cards[which], key="k")
    assert not IdempotencyKey.objects.exists()
    assert not ReviewLog.objects.exists()


def test_a_card_off_the_ladder_lets_the_claim_go(learner, other_learner, cards):
    with pytest.raises(services.NotScheduled):
        submit(other_learner, cards[0], key="k")
    assert not IdempotencyKey.objects.exists()


def test_a_presenter_that_fails_lets_the_claim_go(learner, cards):
    def broken(log):
        raise RuntimeError("serializer failed")

    with pytest.raises(RuntimeError):
        submit(learner, cards[0], key="k", present=broken)
    assert not IdempotencyKey.objects.exists()


def test_a_taken_over_claim_answers_the_review_its_dead_request_recorded(learner, cards):
    recorded = reviews.review_record(
        learner=learner, card=cards[0], result="pass", at=AT, idempotency_key="k"
    )
    claim = IdempotencyKey.objects.create(
        learner=learner, key="k", request_hash=fingerprint(cards[0])
    )
    IdempotencyKey.objects.filter(pk=claim.pk).update(created_at=AT - dt.timedelta(minutes=5))
    present = Presenter()
    answer = submit(learner, cards[0], key="k", present=present)
    assert answer == reviews.Recorded({"id": recorded.pk, "step": 1})
    assert present.logs == [recorded]
    assert ReviewLog.objects.count() == 1
    assert IdempotencyKey.objects.get(pk=claim.pk).status == IdempotencyKey.Status.DONE


def test_a_taken_over_claim_with_nothing_recorded_records_now(learner, cards):
    claim = IdempotencyKey.objects.create(
        learner=learner, key="k", request_hash=fingerprint(cards[0])
    )
    IdempotencyKey.objects.filter(pk=claim.pk).update(created_at=AT - dt.timedelta(minutes=5))
    answer = submit(learner, cards[0], key="k")
    assert not answer.replayed
    assert ReviewLog.objects.get().idempotency_key == "k"


def test_idempotency_begin_returns_a_claim_or_the_stored_answer(learner, cards):
    claim = reviews.idempotency_begin(learner=learner, key="k", fingerprint="f", at=AT)
    assert isinstance(claim, reviews.IdempotencyHold) and not claim.taken_over
    reviews.idempotency_finish(record=claim.record, status=201, body={"id": 7})
    assert reviews.idempotency_begin(
        learner=learner, key="k", fingerprint="f", at=AT
    ) == reviews.Replay(201, {"id": 7})


# --- Through the API --------------------------------------------------------------------


def post(api, card, result="pass", key=None):
    headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
    return api.post(PATH, {"card": card.pk, "result": result}, format="json", **headers)


def test_refusals_under_a_key_answer_as_without_one_and_keep_nothing(
    api, other_api, learner, cards
):
    recall, exercise = cards
    with time_machine.travel(AT, tick=False):
        off_ladder = post(other_api, recall, key="a")
        exercise_card = post(api, exercise, key="b")
    assert off_ladder.status_code == 404 and "No such card" in off_ladder.json()["detail"]
    assert exercise_card.status_code == 400 and "exercise card" in exercise_card.json()["card"][0]
    assert not IdempotencyKey.objects.exists()


def test_a_key_with_a_different_body_is_422_and_in_flight_is_409(api, learner, cards):
    recall, _ = cards
    with time_machine.travel(AT, tick=False):
        first = post(api, recall, key="k")
        other_body = post(api, recall, "fail", key="k")
    assert first.status_code == 201
    assert other_body.status_code == 422
    assert other_body.json() == {
        "detail": "This Idempotency-Key was already used with a different request body."
    }
    IdempotencyKey.objects.create(learner=learner, key="busy", request_hash=fingerprint(recall))
    busy = post(api, recall, key="busy")
    assert busy.status_code == 409 and "still being processed" in busy.json()["detail"]


def test_a_replay_answers_the_stored_body_even_after_the_card_moved_on(api, learner, cards):
    recall, _ = cards
    with time_machine.travel(AT, tick=False):
        first = post(api, recall, key="k")
    # The next day the card is due again (set so here); the key still answers the first review.
    with time_machine.travel(AT + dt.timedelta(hours=20), tick=False):
        ReviewState.objects.filter(learner=learner, card=recall).update(due_on=TODAY)
        replay = post(api, recall, key="k")
        fresh = post(api, recall, key="k2")
    assert replay.status_code == 201 and replay.json() == first.json()
    assert fresh.status_code == 201 and fresh.json()["id"] != first.json()["id"]
    assert ReviewLog.objects.filter(learner=learner).count() == 2


def test_a_malformed_key_is_400_before_the_body_is_read(api, cards):
    response = api.post(PATH, {"card": "x"}, format="json", HTTP_IDEMPOTENCY_KEY="has space")
    assert response.status_code == 400
    assert list(response.json()) == ["Idempotency-Key"]
