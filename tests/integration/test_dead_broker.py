"""With the broker unreachable, the API keeps answering: a failed enqueue is a logged warning.

The server runs as a subprocess configured like production but with ``REDIS_URL``
pointing at a port where nothing listens, and with kombu logging each of its attempts to
connect to the broker: a request that publishes makes one, not a retry loop.
"""

from __future__ import annotations

import datetime as dt
import json
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
# What kombu logs (at DEBUG, with KOMBU_LOG_CONNECTION set) each time it tries to connect
# to the broker, retries included.
BROKER_ATTEMPT = "establishing connection..."


def log_broker_attempts(monkeypatch) -> None:
    """Servers started after this log each of kombu's attempts to connect to the broker."""
    monkeypatch.setenv("KOMBU_LOG_CONNECTION", "1")
    monkeypatch.setenv("LOG_LEVEL", "DEBUG")


@pytest.fixture
def dead_broker_server(tmp_path, monkeypatch):
    log_broker_attempts(monkeypatch)
    with serving(tmp_path, DEAD_BROKER) as server:
        yield server


def call(base: str, method: str, path: str, token: str, body: dict | None = None):
    request = urllib.request.Request(
        base + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    try:
        # A failure guard only: a request stuck on the broker fails here.
        with urllib.request.urlopen(request, timeout=60) as response:
            status, payload = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, payload = error.code, error.read()
    return status, json.loads(payload or b"null")


def call_counting(base: str, server_log, *request) -> tuple[int, object, int]:
    """``call``, with how many times the server tried to connect to the broker meanwhile."""
    before = server_log().count(BROKER_ATTEMPT)
    status, payload = call(base, *request)
    return status, payload, server_log().count(BROKER_ATTEMPT) - before


def test_requests_succeed_and_log_the_failed_enqueue_when_the_broker_is_down(dead_broker_server):
    base, server_log = dead_broker_server
    User = get_user_model()
    learner = User.objects.create_user(username="ada", password="unused-pass-1")
    staff = User.objects.create_user(username="editor", password="unused-pass-2", is_staff=True)
    learner_token = Token.objects.create(user=learner).key
    staff_token = Token.objects.create(user=staff).key
    deck = Deck.objects.create(slug="attention", title="Attention")
    first = Card.objects.create(deck=deck, prompt="Why scale by sqrt(d_k)?")

    # Enrolling places the deck's cards within the request and a review sends no task: the
    # broker is not tried. A new card is placed by a task, sent once: one attempt, refused.
    status, body, attempts = call_counting(
        base, server_log, "POST", "/api/v1/decks/attention/enroll/", learner_token
    )
    assert (status, body["scheduled"], attempts) == (200, 1, 0), body

    ReviewState.objects.filter(learner=learner, card=first).update(due_on=dt.date(2020, 1, 1))
    status, body, attempts = call_counting(
        base,
        server_log,
        "POST",
        "/api/v1/reviews/",
        learner_token,
        {"card": first.id, "result": "pass"},
    )
    assert (status, body["step"], attempts) == (201, 1, 0), body

    status, body, attempts = call_counting(
        base,
        server_log,
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
    assert attempts == 1, server_log()[-3000:]  # no retry loop against the dead broker
    assert Card.objects.filter(pk=body["id"], deck=deck).exists()

    log = server_log()
    assert log.count("Could not enqueue schedule_new_cards for deck") == 1
    assert "Connection refused" in log
    assert "Internal Server Error" not in log and '" 500 ' not in log
