"""With the broker unreachable, the API keeps answering: a failed enqueue is a logged warning.

The server runs as a subprocess configured like production but with ``REDIS_URL``
pointing at a port where nothing listens.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import urllib.error
import urllib.request

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from cards.models import Card, Deck, ReviewState

from .conftest import serving

pytestmark = [
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

DEAD_BROKER = "redis://127.0.0.1:1/5"


@pytest.fixture
def dead_broker_server(tmp_path):
    with serving(tmp_path, DEAD_BROKER) as server:
        yield server


def call(base: str, method: str, path: str, token: str, body: dict | None = None):
    request = urllib.request.Request(
        base + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            status, payload = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, payload = error.code, error.read()
    return status, json.loads(payload or b"null"), time.monotonic() - started


def test_requests_succeed_and_log_the_failed_enqueue_when_the_broker_is_down(dead_broker_server):
    base, server_log = dead_broker_server
    User = get_user_model()
    learner = User.objects.create_user(username="ada", password="unused-pass-1")
    staff = User.objects.create_user(username="editor", password="unused-pass-2", is_staff=True)
    learner_token = Token.objects.create(user=learner).key
    staff_token = Token.objects.create(user=staff).key
    deck = Deck.objects.create(slug="attention", title="Attention")
    first = Card.objects.create(deck=deck, prompt="Why scale by sqrt(d_k)?")

    status, body, elapsed = call(base, "POST", "/api/v1/decks/attention/enroll/", learner_token)
    assert (status, body["scheduled"]) == (200, 1), body
    assert elapsed < 3

    ReviewState.objects.filter(learner=learner, card=first).update(due_on=dt.date(2020, 1, 1))
    status, body, elapsed = call(
        base, "POST", "/api/v1/reviews/", learner_token, {"card": first.id, "result": "pass"}
    )
    assert (status, body["step"]) == (201, 1), body
    assert elapsed < 3

    status, body, elapsed = call(
        base,
        "POST",
        "/api/v1/cards/",
        staff_token,
        {
            "deck": "attention",
            "kind": "recall",
            "prompt": "What does the mask block?",
            "answer": "Future keys.",
        },
    )
    assert status == 201, body
    assert elapsed < 3  # no retry loop against the dead broker
    assert Card.objects.filter(pk=body["id"], deck=deck).exists()

    log = server_log()
    assert "Could not enqueue schedule_new_cards for deck" in log
    assert "Connection refused" in log
    assert "Internal Server Error" not in log and '" 500 ' not in log
