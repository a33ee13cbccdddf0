"""stats/memory/, decks/{slug}/memory/, retrievability on the due queue and card states,
the weekly fit on the queue, and the pages that draw the figures."""

from __future__ import annotations

import datetime as dt
import itertools

import numpy as np
import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cards import memory, services
from cards.due import due_page, due_reviews
from cards.lapses import leech_card_ids
from cards.models import Card, Deck, MemoryParameters, ReviewLog, ReviewState
from cards.renderers import due_items
from cards.serializers import DueItemSerializer
from cards.services.memory import fit_learner, memory_states_rebuild, page_retrievability

pytestmark = pytest.mark.django_db

START = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)
MEMORY = "/api/v1/stats/memory/"


def at(days: int) -> dt.datetime:
    return START + dt.timedelta(days=days)


def get(client, url: str, day: int = 0):
    with time_machine.travel(at(day), tick=False):
        return client.get(url)


@pytest.fixture
def deck(db) -> Deck:
    deck = Deck.objects.create(slug="attention", title="Attention")
    Card.objects.bulk_create(
        Card(deck=deck, kind="recall", prompt=f"P{i}", answer=f"A{i}", position=i) for i in range(4)
    )
    return deck


def enrol(learner, deck):
    services.enroll(learner=learner, deck=deck, at=START)
    return list(deck.cards.order_by("position"))


def review(learner, card, result: str, day: int) -> ReviewLog:
    return services.review_record(learner=learner, card=card, result=result, at=at(day))


def test_the_shape_is_the_contract_and_says_what_it_rests_on(api, learner, deck):
    cards = enrol(learner, deck)
    review(learner, cards[0], "pass", 1)
    review(learner, cards[0], "pass", 4)
    body = get(api, MEMORY, 5).json()
    assert {"target_retention", "rungs", "fsrs", "calibration", "simulation"} <= set(body)
    assert body["target_retention"] == 0.9
    assert [r["interval_days"] for r in body["rungs"]] == [1, 3, 7, 14, 30]
    assert set(body["rungs"][0]) == {"interval_days", "reviews", "passed", "recall", "low", "high"}
    three = body["rungs"][1]
    assert (three["reviews"], three["passed"], three["recall"]) == (1, 1, None)  # too few
    assert three["low"] == pytest.approx(memory.wilson(1, 1)[0], abs=1e-4)
    assert body["fsrs"]["fitted"] is False and body["fsrs"]["reviews_used"] == 0
    assert len(body["fsrs"]["parameters"]) == 21
    calibration = body["calibration"]
    assert calibration["reviews"] == 1 and calibration["rmse_bins"] is None
    assert set(calibration["bins"][0]) == {"predicted", "observed", "count"}
    assert [(s["policy"], s["desired_retention"]) for s in body["simulation"]] == [
        ("ladder", None),
        ("fsrs", 0.8),
        ("fsrs", 0.9),
        ("fsrs", 0.95),
    ]
    for s in body["simulation"]:
        assert set(s) >= {"policy", "desired_retention", "reviews_per_day", "recall"}
        assert len(s["daily_reviews"]) == 365
    assert body["simulation_cards"] == 4


def test_target_retention_follows_the_setting(api, learner, deck, settings):
    settings.STUDY_TARGET_RETENTION = 0.85
    assert get(api, MEMORY).json()["target_retention"] == 0.85


def test_undone_reviews_are_left_out(api, learner, deck):
    cards = enrol(learner, deck)
    review(learner, cards[0], "pass", 1)
    undone = review(learner, cards[0], "fail", 4)
    with time_machine.travel(at(4), tick=False):
        services.review_undo(learner=learner, review_id=undone.pk, at=at(4))
    body = get(api, MEMORY, 5).json()
    assert sum(r["reviews"] for r in body["rungs"]) == 0
    assert body["calibration"]["reviews"] == 0


def test_a_learner_sees_only_their_own_reviews(api, other_api, learner, other_learner, deck):
    cards = enrol(learner, deck)
    enrol(other_learner, deck)
    review(learner, cards[0], "pass", 1)
    review(learner, cards[0], "fail", 4)
    mine = get(api, MEMORY, 5).json()
    theirs = get(other_api, MEMORY, 5).json()
    assert mine["rungs"][1]["reviews"] == 1
    assert sum(r["reviews"] for r in theirs["rungs"]) == 0
    assert theirs["calibration"]["reviews"] == 0


def test_memory_needs_a_login(anon_api):
    assert anon_api.get(MEMORY).status_code in (401, 403)


def test_the_due_queue_carries_todays_retrievability(api, learner, deck):
    cards = enrol(learner, deck)
    review(learner, cards[0], "fail", 1)
    with time_machine.travel(at(2), tick=False):
        results = api.get("/api/v1/reviews/due/?page_size=100").json()["results"]
    by_card = {item["card"]["id"]: item["retrievability"] for item in results}
    assert by_card[cards[1].pk] is None  # never reviewed
    expected = memory.retrievability(
        1, memory.first_state(1, memory.DEFAULT_PARAMETERS)[0], memory.DEFAULT_PARAMETERS
    )
    assert by_card[cards[0].pk] == pytest.approx(float(expected), abs=1e-4)


def test_page_retrievability_is_one_query_and_reads_the_fitted_parameters(learner, deck):
    cards = enrol(learner, deck)
    review(learner, cards[0], "pass", 1)
    today = at(10).date()
    with CaptureQueriesContext(connection) as ctx:
        default = page_retrievability(learner=learner, card_ids=[c.pk for c in cards], today=today)
    assert len(ctx.captured_queries) == 1
    w = list(memory.DEFAULT_PARAMETERS)
    w[2] = 20.0  # a much larger first stability after a pass
    # As a fit stores its parameters: with the memories they give the learner's states.
    MemoryParameters.objects.create(learner=learner, parameters=w, fitted=True, reviews_used=400)
    memory_states_rebuild(learner_id=learner.pk)
    with CaptureQueriesContext(connection) as ctx:
        fitted = page_retrievability(learner=learner, card_ids=[c.pk for c in cards], today=today)
    assert len(ctx.captured_queries) == 1
    assert set(default) == set(fitted) == {cards[0].pk}
    assert fitted[cards[0].pk] > default[cards[0].pk]
    assert fitted[cards[0].pk] == pytest.approx(float(memory.retrievability(9, 20.0, w)), abs=1e-4)


def test_the_fast_renderer_equals_the_serializer_with_retrievability(learner, deck):
    cards = enrol(learner, deck)
    review(learner, cards[0], "fail", 1)
    today = at(2).date()
    rows = due_page(learner=learner, today=today, offset=0, limit=100)
    recall = page_retrievability(
        learner=learner, card_ids=[r["card_id"] for r in rows], today=today
    )
    rendered = due_items(rows, exercises={}, retrievability=recall)
    expected = DueItemSerializer(
        [
            {
                "card": state.card,
                "step": state.step,
                "interval_days": 1,
                "due_on": state.due_on,
                "leech": state.card_id in leech_card_ids(learner=learner),
                "retrievability": recall.get(state.card_id),
            }
            for state in due_reviews(learner=learner, today=today)
        ],
        many=True,
    ).data
    assert [r["retrievability"] for r in rendered].count(None) == 3
    assert [{k: v for k, v in item.items() if k != "exercise"} for item in expected] == [
        {**item, "due_on": item["due_on"].isoformat()} for item in rendered
    ]


def test_card_states_carry_retrievability(api, learner, deck):
    cards = enrol(learner, deck)
    review(learner, cards[0], "pass", 1)
    with time_machine.travel(at(3), tick=False):
        body = api.post(
            f"/api/v1/cards/{cards[0].pk}/suspend/", {"suspended": True}, format="json"
        ).json()
        fresh = api.post(f"/api/v1/cards/{cards[1].pk}/bury/").json()
    assert 0 < body["retrievability"] < 1
    assert fresh["retrievability"] is None


# --- The weekly fit ------------------------------------------------------------------


def bulk_history(learner, deck, *, cards: int = 40, reviews_per_card: int = 12, seed: int = 0):
    """A learner's log written straight to the table: enough reviews to fit."""
    rng = np.random.default_rng(seed)
    made = Card.objects.bulk_create(
        Card(deck=deck, kind="recall", prompt=f"B{i}", position=100 + i) for i in range(cards)
    )
    rows = []
    for card in made:
        day = START.date()
        for _ in range(reviews_per_card):
            day += dt.timedelta(days=int(rng.choice([1, 3, 7, 14, 30])))
            rows.append(
                ReviewLog(
                    learner=learner,
                    card=card,
                    reviewed_at=dt.datetime.combine(day, dt.time(12), tzinfo=dt.UTC),
                    study_day=day,
                    result="pass" if rng.random() < 0.85 else "fail",
                    step_before=0,
                    step_after=0,
                    interval_days=1,
                    due_before=day,
                    due_after=day,
                )
            )
    ReviewLog.objects.bulk_create(rows)
    return len(rows) - cards


@pytest.fixture
def eager_celery():
    from studyapp.celery import app

    app.conf.task_always_eager = True
    yield app
    app.conf.task_always_eager = False


def test_the_weekly_refresh_fans_out_and_fits_only_who_has_enough(
    learner, other_learner, deck, eager_celery
):
    from cards import tasks

    used = bulk_history(learner, deck)
    assert used >= memory.FIT_MINIMUM
    assert tasks.refresh_memory_parameters(chunk_size=1) >= 2  # chunks enqueued, run eagerly
    row = MemoryParameters.objects.get(learner=learner)
    assert row.fitted and row.reviews_used == used and len(row.parameters) == 21
    assert [fit["reviews"] for fit in row.history] == sorted(fit["reviews"] for fit in row.history)
    assert not MemoryParameters.objects.filter(learner=other_learner, fitted=True).exists()
    history = list(row.history)
    tasks.refresh_memory_parameters()  # nothing new: nothing refitted
    row.refresh_from_db()
    assert row.history == history


def test_a_later_fit_adds_one_fit_and_keeps_the_earlier(learner, deck):
    bulk_history(learner, deck)
    assert fit_learner(learner_id=learner.pk, at=at(400))
    first = MemoryParameters.objects.get(learner=learner).history
    bulk_history(learner, deck, cards=5, seed=1)
    assert fit_learner(learner_id=learner.pk, at=at(800))
    later = MemoryParameters.objects.get(learner=learner).history
    assert later[: len(first)] == first and len(later) == len(first) + 1


# --- A deck's figures, for staff -----------------------------------------------------


def test_deck_memory_is_for_staff_only(api, anon_api, deck):
    assert api.get(f"/api/v1/decks/{deck.slug}/memory/").status_code == 403
    assert anon_api.get(f"/api/v1/decks/{deck.slug}/memory/").status_code in (401, 403)


def test_deck_memory_for_staff(staff_api, learner, other_learner, deck):
    cards = enrol(learner, deck)
    enrol(other_learner, deck)
    review(learner, cards[0], "pass", 1)
    review(learner, cards[0], "pass", 4)
    review(other_learner, cards[0], "pass", 1)
    review(other_learner, cards[0], "fail", 4)
    bulk_history(learner, deck)
    fit_learner(learner_id=learner.pk, at=at(500))
    body = staff_api.get(f"/api/v1/decks/{deck.slug}/memory/").json()
    assert body["deck"] == deck.slug and body["learners"] == 2
    assert body["fsrs"]["fitted_learners"] == 1
    first_card = next(c for c in body["cards"] if c["card"] == cards[0].pk)
    assert (first_card["reviews"], first_card["passed"]) == (2, 1)
    assert body["simulation_learners"] == 2
    ladder = body["suggested_ladder"]
    assert ladder["learners"] == 1 and len(ladder["intervals"]) == 5
    assert all(b > a for a, b in itertools.pairwise(ladder["intervals"]))
    assert body["calibration"]["reviews"] == sum(r["reviews"] for r in body["rungs"])
    assert staff_api.get("/api/v1/decks/no-such-deck/memory/").status_code == 404


def test_deck_memory_suggests_nothing_without_a_fitted_learner(staff_api, deck):
    body = staff_api.get(f"/api/v1/decks/{deck.slug}/memory/").json()
    assert body["suggested_ladder"] == {"intervals": None, "learners": 0}
    assert body["learners"] == 0 and body["calibration"]["reviews"] == 0


def test_the_schema_documents_both_routes(anon_api):
    schema = anon_api.get("/api/schema/?format=json").json()
    assert "/api/v1/stats/memory/" in schema["paths"]
    deck_path = schema["paths"]["/api/v1/decks/{slug}/memory/"]["get"]
    assert {"200", "403", "404"} <= set(deck_path["responses"])
    due = schema["components"]["schemas"]["DueItem"]["properties"]
    assert due["retrievability"]["nullable"] is True


# --- Pages -----------------------------------------------------------------------------


def test_the_progress_page_shows_the_memory_section(client, learner, deck):
    cards = enrol(learner, deck)
    review(learner, cards[0], "pass", 1)
    client.force_login(learner)
    with time_machine.travel(at(5), tick=False):
        page = client.get("/progress/").content.decode()
    assert 'id="memory-rungs"' in page and 'id="calibration-chart"' in page
    assert 'id="workload-chart"' in page and 'stroke="currentColor"' in page
    assert "too few reviews" in page


def test_the_staff_deck_memory_page(client, staff, learner, deck):
    cards = enrol(learner, deck)
    review(learner, cards[0], "pass", 1)
    client.force_login(staff)
    listing = client.get("/admin/cards/memoryparameters/decks/")
    assert listing.status_code == 200 and deck.title in listing.content.decode()
    page = client.get(f"/admin/cards/memoryparameters/decks/{deck.slug}/").content.decode()
    assert 'id="memory-rungs"' in page and 'id="calibration-chart"' in page
    assert 'id="suggested-ladder"' in page and 'id="memory-cards"' in page
    assert client.get("/admin/cards/memoryparameters/decks/nope/").status_code == 404


def test_the_deck_memory_page_is_not_for_learners(client, learner, deck):
    client.force_login(learner)
    response = client.get(f"/admin/cards/memoryparameters/decks/{deck.slug}/")
    assert response.status_code == 302
    assert ReviewState.objects.count() == 0
