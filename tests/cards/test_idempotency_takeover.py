"""An Idempotency-Key whose first request stalled past its lease still answers its review.

The retry takes the claim over; the stalled request's statement may then record the
review while the retry runs. The retry answers 201 with that review (not 409 "not due"),
and the stalled request, when it comes back, neither deletes nor overwrites the claim it
lost.
"""

from __future__ import annotations

import datetime as dt

import pytest
import time_machine

from cards import services
from cards.models import Card, Deck, IdempotencyKey, ReviewLog, ReviewState
from cards.services import reviews

pytestmark = pytest.mark.django_db

PATH = "/api/v1/reviews/"
TODAY = dt.date(2026, 3, 10)
AT = dt.datetime(2026, 3, 10, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def card(learner):
    deck = Deck.objects.create(slug="keys", title="Keys")
    card = Card.objects.create(deck=deck, kind="recall", prompt="P", answer="A")
    services.enroll(learner=learner, deck=deck, at=AT - dt.timedelta(days=3))
    ReviewState.objects.filter(learner=learner).update(due_on=TODAY)
    return card


def _fingerprint(card) -> str:
    return reviews.request_fingerprint(
        method="POST", path=PATH, body={"card": card.pk, "result": "pass"}
    )


def _stalled_claim(learner, card, *, minutes: float = 2) -> IdempotencyKey:
    """The claim of a first request that has been in the database for ``minutes``."""
    claim = IdempotencyKey.objects.create(learner=learner, key="k", request_hash=_fingerprint(card))
    IdempotencyKey.objects.filter(pk=claim.pk).update(created_at=AT - dt.timedelta(minutes=minutes))
    claim.refresh_from_db()
    return claim


def test_a_retry_that_took_over_answers_the_review_its_stalled_request_recorded(
    api, learner, card, monkeypatch
):
    _stalled_claim(learner, card)
    real_advance = reviews._advance
    stalled: list[ReviewLog] = []

    def stalled_statement_lands_first(**kwargs):
        # After the retry's takeover looked for a review under the key and found none,
        # the stalled request's statement records it; the retry's own move comes second.
        if not stalled:
            state = ReviewState.objects.get(pk=kwargs["state"].pk)
            stalled.append(real_advance(**{**kwargs, "state": state, "key": "k"}))
        return real_advance(**kwargs)

    monkeypatch.setattr(reviews, "_advance", stalled_statement_lands_first)
    body = {"card": card.pk, "result": "pass"}
    with time_machine.travel(AT, tick=False):
        retry = api.post(PATH, body, format="json", HTTP_IDEMPOTENCY_KEY="k")
        later = api.post(PATH, body, format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert retry.status_code == 201, retry.content
    assert retry.json()["id"] == stalled[0].pk
    # The key holds the answer: every later retry replays it.
    assert later.status_code == 201 and later.json() == retry.json()
    key = IdempotencyKey.objects.get(learner=learner, key="k")
    assert key.status == IdempotencyKey.Status.DONE and key.response_status == 201
    assert ReviewLog.objects.filter(learner=learner).count() == 1
    assert ReviewState.objects.get(learner=learner, card=card).step == 1


def test_a_stalled_request_coming_back_leaves_the_claim_it_lost_alone(learner, card):
    stalled = reviews.IdempotencyHold(_stalled_claim(learner, card))
    retry = reviews.idempotency_begin(
        learner=learner, key="k", fingerprint=_fingerprint(card), at=AT
    )
    assert isinstance(retry, reviews.IdempotencyHold) and retry.taken_over
    # The stalled request fails and lets its claim go: the retry's claim stays.
    reviews.idempotency_abandon(record=stalled.record)
    assert IdempotencyKey.objects.filter(learner=learner, key="k").exists()
    reviews.idempotency_finish(record=retry.record, status=201, body={"id": 7})
    # Or it finishes late: the retry's stored answer stands.
    reviews.idempotency_finish(record=stalled.record, status=409, body={"detail": "late"})
    key = IdempotencyKey.objects.get(learner=learner, key="k")
    assert (key.status, key.response_status, key.response_body) == (
        IdempotencyKey.Status.DONE,
        201,
        {"id": 7},
    )
