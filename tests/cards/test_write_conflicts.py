"""Undos racing submissions of one learner: one lock order, and a lost race retried.

On PostgreSQL the counts (``ReviewStateCount``, ``LapseCount``) are kept by triggers and
the study days (``ReviewDay``) by the services; every write path of a learner's reviews
takes the learner's lock first, so they never wait on each other in a cycle. A
transaction that still loses a deadlock or a serialization conflict is run again inside
the request; a 503 is kept for a database that does not answer.
"""

from __future__ import annotations

import datetime as dt

import psycopg
import pytest
import time_machine
from django.db import OperationalError
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from cards import services
from cards.models import Card, Deck, LearnerProfile, ReviewDay, ReviewLog, ReviewState
from cards.services import review_days, reviews
from studyapp.common import db as common_db
from tests.cards.concurrency import in_threads

from .conftest import START
from .test_state_counts import assert_exact

DAY1 = START + dt.timedelta(days=1)


def _client(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def _act(token: str, kind: str, target: int) -> int:
    client = _client(token)
    if kind == "undo":
        return client.post(f"/api/v1/reviews/{target}/undo/").status_code
    body = {"card": target, "result": "fail" if target % 3 == 0 else "pass"}
    return client.post("/api/v1/reviews/", body, format="json").status_code


def _days_from_log() -> dict[tuple, tuple]:
    """What ``ReviewDay`` must hold: the rows rebuilt from the log, read back."""
    rows = {
        (d.learner_id, d.study_day): (d.reviews, d.passes, d.min_due_before)
        for d in ReviewDay.objects.all()
    }
    review_days.review_days_rebuild()
    rebuilt = {
        (d.learner_id, d.study_day): (d.reviews, d.passes, d.min_due_before)
        for d in ReviewDay.objects.all()
    }
    return {"stored": rows, "rebuilt": rebuilt}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_undos_racing_submissions_never_answer_503(make_user):
    user = make_user("racer")
    deck = Deck.objects.create(slug="race", title="Race")
    cards = [Card.objects.create(deck=deck, kind="recall", prompt=f"Q{i}") for i in range(48)]
    LearnerProfile.objects.filter(user=user).update(new_cards_per_day=48)
    user.refresh_from_db()
    with time_machine.travel(START, tick=False):
        services.enroll(learner=user, deck=deck, at=START)
    token = Token.objects.get_or_create(user=user)[0].key
    statuses: list[int] = []
    with time_machine.travel(DAY1, tick=True):
        # Rounds of half the cards reviewed, then undone while the other half is reviewed:
        # both paths move states between the same (due date, rung) counts at once.
        for first in range(0, len(cards), 16):
            batch = cards[first : first + 16]
            reviewed = [
                _client(token)
                .post("/api/v1/reviews/", {"card": c.pk, "result": "pass"}, format="json")
                .json()["id"]
                for c in batch[:8]
            ]
            jobs = [(token, "undo", r) for r in reviewed] + [
                (token, "review", c.pk) for c in batch[8:]
            ]
            statuses += in_threads(jobs, _act)
    assert 503 not in statuses
    assert sorted(statuses) == [200] * 24 + [201] * 24
    assert ReviewLog.objects.filter(learner=user, undo_of__isnull=False).count() == 24
    submitted = [c for first in range(0, len(cards), 16) for c in cards[first + 8 : first + 16]]
    failed = sum(1 for c in submitted if c.pk % 3 == 0)
    assert ReviewState.objects.filter(learner=user, step=1).count() == 24 - failed
    assert ReviewState.objects.filter(learner=user, due_on=DAY1.date()).count() == 24
    assert_exact()
    days = _days_from_log()
    assert days["stored"] == days["rebuilt"]
    assert days["stored"][(user.pk, DAY1.date())][:2] == (24, 24 - failed)


def _deadlock() -> OperationalError:
    """What Django raises when PostgreSQL picks this transaction as a deadlock's victim."""
    error = OperationalError("deadlock detected")
    error.__cause__ = psycopg.errors.DeadlockDetected("deadlock detected")
    return error


def _loses_once(monkeypatch, module, name: str, error=_deadlock, *, after_work=True) -> dict:
    """Make ``module.name`` raise ``error()`` on its first call, after doing its work
    (which the database then rolls back with the transaction) or instead of it."""
    real = getattr(module, name)
    calls = {"n": 0}

    def once(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1 and not after_work:
            raise error()
        result = real(*args, **kwargs)
        if calls["n"] == 1:
            raise error()
        return result

    monkeypatch.setattr(module, name, once)
    return calls


@pytest.mark.django_db(transaction=True)
def test_a_submission_that_lost_a_deadlock_is_run_again(api, learner, deck, monkeypatch):
    with time_machine.travel(START, tick=False):
        services.enroll(learner=learner, deck=deck, at=START)
    card = deck.cards.order_by("position").first()
    # One statement on PostgreSQL, rolled back whole when it loses: it did nothing.
    calls = _loses_once(monkeypatch, reviews, "_advance", after_work=False)
    with time_machine.travel(DAY1, tick=False):
        response = api.post("/api/v1/reviews/", {"card": card.pk, "result": "pass"}, format="json")
    assert response.status_code == 201, response.content
    assert calls["n"] == 2
    # The lost attempt left nothing behind: one review, counted once.
    assert ReviewLog.objects.filter(learner=learner).count() == 1
    assert ReviewState.objects.get(learner=learner, card=card).step == 1
    assert ReviewDay.objects.get(learner=learner).reviews == 1
    assert_exact()


@pytest.mark.django_db(transaction=True)
def test_an_undo_that_lost_a_serialization_conflict_is_run_again(api, learner, deck, monkeypatch):
    with time_machine.travel(START, tick=False):
        services.enroll(learner=learner, deck=deck, at=START)
    card = deck.cards.order_by("position").first()
    with time_machine.travel(DAY1, tick=False):
        review = api.post("/api/v1/reviews/", {"card": card.pk, "result": "fail"}, format="json")

        def conflict() -> OperationalError:
            error = OperationalError("could not serialize access")
            error.__cause__ = psycopg.errors.SerializationFailure("could not serialize access")
            return error

        calls = _loses_once(monkeypatch, review_days, "review_day_undone", conflict)
        response = api.post(f"/api/v1/reviews/{review.json()['id']}/undo/")
    assert response.status_code == 200, response.content
    assert calls["n"] == 2
    assert ReviewLog.objects.filter(learner=learner, undo_of__isnull=False).count() == 1
    assert ReviewState.objects.get(learner=learner, card=card).step == 0
    assert ReviewDay.objects.get(learner=learner).reviews == 0
    assert_exact()


@pytest.mark.django_db(transaction=True)
def test_a_conflict_lost_every_time_is_busy_and_a_lost_database_is_down(
    api, learner, deck, monkeypatch
):
    with time_machine.travel(START, tick=False):
        services.enroll(learner=learner, deck=deck, at=START)
    card = deck.cards.order_by("position").first()
    calls = {"n": 0}

    def always(**kwargs):
        calls["n"] += 1
        raise _deadlock()

    monkeypatch.setattr(reviews, "_advance", always)
    with time_machine.travel(DAY1, tick=False):
        response = api.post("/api/v1/reviews/", {"card": card.pk, "result": "pass"}, format="json")
    assert response.status_code == 503
    assert int(response["Retry-After"]) <= 2
    assert "conflicting" in response.json()["detail"]
    assert calls["n"] == common_db.CONFLICT_ATTEMPTS
    assert not ReviewLog.objects.filter(learner=learner).exists()

    # A database that is gone is no race: not run again, and the longer Retry-After.
    calls["n"] = 0

    def gone(**kwargs):
        calls["n"] += 1
        raise OperationalError("connection refused")

    monkeypatch.setattr(reviews, "_advance", gone)
    with time_machine.travel(DAY1, tick=False):
        response = api.post("/api/v1/reviews/", {"card": card.pk, "result": "pass"}, format="json")
    assert response.status_code == 503
    assert int(response["Retry-After"]) == 30
    assert "not answering" in response.json()["detail"]
    assert calls["n"] == 1
