"""Two concurrent submissions for one due card advance it once, on a real database."""

import datetime as dt
import threading

import pytest
import time_machine
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from cards.models import Card, Deck, ReviewLog, ReviewState
from cards.services import enroll

START = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)


def _race(user, card, bodies, headers):
    """Fire the bodies at once from separate threads and connections; return their statuses."""
    token = Token.objects.get_or_create(user=user)[0].key
    barrier = threading.Barrier(len(bodies))
    statuses: list[int] = []

    def submit(body):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        try:
            barrier.wait()
            statuses.append(
                client.post("/api/v1/reviews/", body, format="json", **headers).status_code
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=submit, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(statuses)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("round_", range(5))
def test_concurrent_submissions_advance_a_card_once(make_user, round_):
    user = make_user(f"racer{round_}")
    deck = Deck.objects.create(slug=f"race-{round_}", title="Race")
    card = Card.objects.create(deck=deck, kind="recall", prompt="Q")
    with time_machine.travel(START, tick=False):
        enroll(learner=user, deck=deck, at=START)
    with time_machine.travel(START + dt.timedelta(days=1), tick=True):
        bodies = [{"card": card.id, "result": r} for r in ("pass", "fail", "pass", "pass")]
        statuses = _race(user, card, bodies, {})
    assert statuses == [201, 409, 409, 409]
    assert ReviewLog.objects.filter(learner=user, card=card).count() == 1
    log = ReviewLog.objects.get(learner=user, card=card)
    state = ReviewState.objects.get(learner=user, card=card)
    assert (state.step, state.due_on) == (log.step_after, log.due_after)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_same_idempotency_key_records_once(make_user):
    user = make_user("keyracer")
    deck = Deck.objects.create(slug="race-key", title="Race")
    card = Card.objects.create(deck=deck, kind="recall", prompt="Q")
    enroll(learner=user, deck=deck, at=START)
    with time_machine.travel(START + dt.timedelta(days=1), tick=True):
        body = {"card": card.id, "result": "pass"}
        statuses = _race(user, card, [body] * 4, {"HTTP_IDEMPOTENCY_KEY": "same"})
    # One wins; the others either replay its 201 or are told it is still in flight.
    assert statuses.count(201) >= 1
    assert set(statuses) <= {201, 409}
    assert ReviewLog.objects.filter(learner=user).count() == 1
    assert ReviewState.objects.get(learner=user, card=card).step == 1
