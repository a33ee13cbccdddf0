"""The bare floor of ``bench_load`` does the work the API does: the same due page, and a
review recorded as ``POST reviews/`` records it (so the ratio compares like with like)."""

from __future__ import annotations

import datetime as dt
import io
import json

import psycopg
import pytest
import time_machine
from django.db import connection
from rest_framework.authtoken.models import Token

from benchmarks import floor
from cards.models import Card, Deck, ReviewDay, ReviewLog, ReviewState

START = dt.datetime(2026, 3, 2, 12, tzinfo=dt.UTC)
LATER = START + dt.timedelta(days=2)


@pytest.fixture
def floor_on_test_database(monkeypatch):
    settings = connection.settings_dict
    conn = psycopg.connect(
        host=settings["HOST"] or "127.0.0.1",
        port=settings["PORT"] or 5432,
        user=settings["USER"],
        password=settings["PASSWORD"] or None,
        dbname=settings["NAME"],
        autocommit=True,
    )
    monkeypatch.setattr(floor._local, "conn", conn, raising=False)
    yield
    conn.close()


def call(method: str, path: str, token: str, body: dict | None = None) -> tuple[str, dict]:
    data = json.dumps(body).encode() if body is not None else b""
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "HTTP_AUTHORIZATION": f"Token {token}",
        "CONTENT_LENGTH": str(len(data)),
        "wsgi.input": io.BytesIO(data),
    }
    statuses = []
    chunks = floor.application(environ, lambda status, headers: statuses.append(status))
    return statuses[0], json.loads(b"".join(chunks))


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_floor_answers_the_due_page_and_records_a_review_as_the_api_does(
    api, learner, floor_on_test_database
):
    deck = Deck.objects.create(slug="heads", title="Heads")
    for i in range(4):
        Card.objects.create(deck=deck, kind="recall", prompt=f"P{i}", answer=f"A{i}", position=i)
    token = Token.objects.get(user=learner).key
    with time_machine.travel(START, tick=False):
        assert api.post(f"/api/v1/decks/{deck.slug}/enroll/").status_code in (200, 201)
    with time_machine.travel(LATER, tick=False):
        ours = api.get("/api/v1/reviews/due/").json()
        status, bare = call("GET", "/bench/floor/due/", token)
        assert status == "200 OK"
        assert bare == ours

        first, second = (item["card"]["id"] for item in ours["results"][:2])
        recorded = api.post("/api/v1/reviews/", {"card": first, "result": "pass"}, format="json")
        status, bare = call(
            "POST", "/bench/floor/reviews/", token, {"card": second, "result": "pass"}
        )
    assert status == "201 Created"
    expected = recorded.json()
    assert set(bare) == set(expected)
    for field in ("result", "study_day", "step_before", "step", "interval_days", "due_before"):
        assert bare[field] == expected[field], field
    assert bare["due_on"] == expected["due_on"] and bare["card"] == second
    assert ReviewLog.objects.filter(learner=learner).count() == 2
    state = ReviewState.objects.get(learner=learner, card_id=second)
    assert (state.step, state.due_on.isoformat()) == (bare["step"], bare["due_on"])
    assert ReviewDay.objects.get(learner=learner).reviews == 2
    # The condition holds: the same card again is no longer due, and nothing changes.
    with time_machine.travel(LATER, tick=False):
        status, _ = call("POST", "/bench/floor/reviews/", token, {"card": second, "result": "pass"})
    assert status == "409 Conflict"
    assert ReviewLog.objects.filter(learner=learner).count() == 2
    assert call("GET", "/bench/floor/due/", "not-a-token")[0] == "401 Unauthorized"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_floor_reads_each_items_retrievability_as_the_api_does(
    api, learner, floor_on_test_database
):
    """From the memory the states keep, and from a replay where it is not current."""
    deck = Deck.objects.create(slug="heads", title="Heads")
    cards = [
        Card.objects.create(deck=deck, kind="recall", prompt=f"P{i}", answer=f"A{i}", position=i)
        for i in range(4)
    ]
    token = Token.objects.get(user=learner).key
    with time_machine.travel(START, tick=False):
        api.post(f"/api/v1/decks/{deck.slug}/enroll/")
    for days, card, result in [(1, 0, "fail"), (1, 1, "fail"), (2, 0, "fail")]:
        with time_machine.travel(START + dt.timedelta(days=days), tick=False):
            api.post("/api/v1/reviews/", {"card": cards[card].pk, "result": result}, format="json")
    # A memory a write left behind (as a review the floor records would): not current.
    ReviewState.objects.filter(learner=learner, card=cards[1]).update(
        last_reviewed_at=START + dt.timedelta(days=1, hours=1)
    )
    with time_machine.travel(START + dt.timedelta(days=6), tick=False):
        ours = api.get("/api/v1/reviews/due/").json()
        status, bare = call("GET", "/bench/floor/due/", token)
    assert status == "200 OK" and bare == ours
    recall = {item["card"]["id"]: item["retrievability"] for item in ours["results"]}
    assert recall[cards[0].pk] is not None and recall[cards[1].pk] is not None
    assert recall[cards[2].pk] is None  # never reviewed
