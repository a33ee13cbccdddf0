"""The review-state counts kept by the database equal a recount of the states after every write.

The counts (``ReviewStateCount``, kept by triggers from migration 0009) must equal
``GROUP BY learner, due_on, step, suspended`` over the scheduled states whoever wrote
them; stats/ reads its forecast, due count and ``by_step`` from them.
"""

from __future__ import annotations

import datetime as dt
import importlib

import pytest
import time_machine
from django.conf import settings
from django.db import connection
from django.db.models import Count
from rest_framework.authtoken.models import Token

from cards import services
from cards.models import Card, Deck, LearnerProfile, ReviewState, ReviewStateCount
from cards.services.scheduling import schedule_new_cards
from cards.stats import FORECAST_DAYS, learner_stats
from tests.cards.concurrency import in_threads, post_review

from .conftest import START, reviewed_on_study_day

pytestmark = pytest.mark.django_db
DAY1 = START + dt.timedelta(days=1)  # the enrolled cards are due
PASSWORD = "s3cret-pass!"  # make_user's


def recount() -> dict[tuple, int]:
    """``GROUP BY`` over the scheduled states: what the counts must hold."""
    rows = (
        ReviewState.objects.filter(scheduled=True)
        .values_list("learner_id", "due_on", "step", "suspended")
        .annotate(n=Count("*"))
    )
    return {(learner, due_on, step, suspended): n for learner, due_on, step, suspended, n in rows}


def stored() -> dict[tuple, int]:
    rows = ReviewStateCount.objects.values_list("learner_id", "due_on", "step", "suspended", "n")
    counts = {(learner, due_on, step, suspended): n for learner, due_on, step, suspended, n in rows}
    assert len(counts) == len(rows)
    return counts


def assert_exact() -> dict[tuple, int]:
    expected = recount()
    assert stored() == expected
    # Zero counts are deleted by the trigger that empties them.
    assert not ReviewStateCount.objects.filter(n__lte=0).exists()
    return expected


def enroll(api, slug="attention"):
    assert api.post(f"/api/v1/decks/{slug}/enroll/").status_code == 200


def review(api, card_id, result="pass") -> dict:
    response = api.post("/api/v1/reviews/", {"card": card_id, "result": result}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_every_write_path_keeps_the_counts_exact(
    api, other_api, staff_api, learner, other_learner, deck
):
    cards = list(deck.cards.order_by("id"))
    recall = [card for card in cards if card.kind == "recall"]
    with time_machine.travel(START, tick=False) as traveller:
        enroll(api)
        enroll(other_api)
        assert sum(assert_exact().values()) == 8
        # Placement: the beat job's raw INSERT ... SELECT (for learners who reviewed).
        Card.objects.create(deck=deck, kind="recall", prompt="New", position=9)
        for who in (learner, other_learner):
            reviewed_on_study_day(who, START)
        assert schedule_new_cards(at=START) == 2
        assert sum(assert_exact().values()) == 10

        traveller.move_to(DAY1)
        passed = review(api, recall[0].id, "pass")
        review(api, recall[1].id, "fail")
        review(other_api, recall[0].id, "pass")
        assert_exact()
        assert api.post(f"/api/v1/reviews/{passed['id']}/undo/").status_code == 200
        assert_exact()

        assert api.post(f"/api/v1/cards/{recall[2].id}/suspend/").status_code == 200
        assert (learner.pk, DAY1.date(), 0, True) in assert_exact()
        assert api.delete(f"/api/v1/cards/{recall[2].id}/suspend/").status_code == 204
        assert api.post(f"/api/v1/cards/{cards[3].id}/bury/").status_code == 200
        before = assert_exact()

        # A pause moves every due date on; ending it early moves them back.
        pause = {"start": DAY1.date().isoformat(), "days": 5}
        assert api.post("/api/v1/me/pause/", pause, format="json").status_code == 200
        assert assert_exact() != before
        assert api.delete("/api/v1/me/pause/").status_code == 200
        assert assert_exact() == before

        # Staff (de)activate a card: ``scheduled`` flips for both learners.
        staff_api.patch(f"/api/v1/cards/{recall[0].id}/", {"active": False}, format="json")
        assert sum(assert_exact().values()) == 8
        staff_api.patch(f"/api/v1/cards/{recall[0].id}/", {"active": True}, format="json")
        assert sum(assert_exact().values()) == 10

        # Unenrol, enrol again: the same states come back.
        assert api.delete("/api/v1/decks/attention/enroll/").status_code == 204
        assert {key[0] for key in assert_exact()} == {other_learner.pk}
        enroll(api)
        assert assert_exact() == before

        # Deleting a card cascades to its states.
        cards[3].delete()
        assert sum(assert_exact().values()) == 8

        # Deleting the account deletes its states, and their counts with them.
        response = api.delete("/api/v1/me/", {"password": PASSWORD}, format="json")
        assert response.status_code == 204, response.content
        assert sum(assert_exact().values()) == 4
        assert not ReviewStateCount.objects.filter(learner_id=learner.pk).exists()


def test_bulk_and_raw_writes_are_counted(learner, other_learner, deck, other_deck):
    day = START.date()
    states = ReviewState.objects.bulk_create(
        ReviewState(learner=learner, card=card, step=i % 3, due_on=day + dt.timedelta(days=i % 2))
        for i, card in enumerate(deck.cards.all())
    )
    assert sum(assert_exact().values()) == 4
    ReviewState.objects.filter(learner=learner).update(due_on=day)
    assert assert_exact() == {
        (learner.pk, day, 0, False): 2,
        (learner.pk, day, 1, False): 1,
        (learner.pk, day, 2, False): 1,
    }
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO cards_reviewstate (learner_id, card_id, step, due_on, created_at,"
            " updated_at) SELECT %s, id, 4, %s, %s, %s FROM cards_card WHERE deck_id = %s",
            [other_learner.pk, day, START, START, other_deck.pk],
        )
        cursor.execute(
            "UPDATE cards_reviewstate SET suspended = %s WHERE id = %s", [True, states[0].pk]
        )
        # Not scheduled: out of the counts, and back.
        cursor.execute(
            "UPDATE cards_reviewstate SET scheduled = %s WHERE id = %s", [False, states[1].pk]
        )
    assert sum(assert_exact().values()) == 4
    ReviewState.objects.filter(pk=states[1].pk).update(scheduled=True, step=4)
    assert sum(assert_exact().values()) == 5
    # Only last_reviewed_at or buried_on: the keys stay, nothing changes.
    before = assert_exact()
    ReviewState.objects.update(last_reviewed_at=START, buried_on=day)
    assert assert_exact() == before
    ReviewState.objects.filter(learner=learner).delete()
    assert assert_exact() == {(other_learner.pk, day, 4, False): 1}
    Deck.objects.filter(pk=other_deck.pk).delete()
    assert assert_exact() == {} and not ReviewStateCount.objects.exists()


def test_the_counts_are_read_only_from_django(learner, deck):
    ReviewState.objects.create(learner=learner, card=deck.cards.first(), due_on=START.date())
    row = ReviewStateCount.objects.get()
    assert row.n == 1
    with pytest.raises(TypeError, match="kept by the database"):
        row.save()
    with pytest.raises(TypeError, match="kept by the database"):
        row.delete()


# --- stats/ reads the counts and equals a count over the states ---------------------------


def stats_from_states(learner, today: dt.date, *, paused: bool, first_day: dt.date) -> dict:
    """The forecast, due count and by_step as stats/ computed them from the states."""
    states = ReviewState.objects.filter(learner=learner, scheduled=True)
    horizon = today + dt.timedelta(days=FORECAST_DAYS - 1)
    forecast = {today + dt.timedelta(days=i): 0 for i in range(FORECAST_DAYS)}
    due_today = 0
    queue = states.filter(due_on__lte=horizon, suspended=False).exclude(buried_on=today)
    for state in queue:
        due_today += state.due_on <= today and not paused
        day = max(state.due_on, first_day)
        if day in forecast:
            forecast[day] += 1
    by_step = {str(step): 0 for step in range(len(settings.STUDY_LADDER_DAYS))}
    for state in states:
        by_step[str(state.step)] += 1
    return {
        "due_today": due_today,
        "by_step": by_step,
        "forecast": [{"date": day, "count": n, "new": 0} for day, n in forecast.items()],
    }


@pytest.mark.parametrize("pause_days", [0, 3])
def test_stats_equal_a_count_over_the_states(api, learner, other_learner, pause_days):
    deck = Deck.objects.create(slug="wide", title="Wide")
    cards = Card.objects.bulk_create(
        Card(deck=deck, kind="recall", prompt=f"P{i}", position=i) for i in range(60)
    )
    today = DAY1.date()
    # A pace that places the whole deck at once.
    LearnerProfile.objects.filter(user__in=[learner, other_learner]).update(new_cards_per_day=1000)
    with time_machine.travel(START, tick=False):
        enroll(api, "wide")
        services.enroll(learner=other_learner, deck=deck, at=START)
    for i, card in enumerate(cards):
        ReviewState.objects.filter(learner=learner, card=card).update(
            due_on=today + dt.timedelta(days=i % 40 - 8),
            step=i % 5,
            suspended=i % 7 == 0,
            buried_on=today
            if i % 6 == 0
            else (today - dt.timedelta(days=1) if i % 6 == 1 else None),
        )
    ReviewState.objects.filter(learner=learner, card__in=cards[:5]).update(scheduled=False)
    with time_machine.travel(DAY1, tick=False):
        if pause_days:
            services.pause_begin(learner=learner, start=today, days=pause_days, today=today)
        body = api.get("/api/v1/stats/").json()
    stats = learner_stats(learner=learner, today=today)
    first_day = today + dt.timedelta(days=pause_days)
    expected = stats_from_states(learner, today, paused=bool(pause_days), first_day=first_day)
    assert {key: stats[key] for key in expected} == expected
    assert body["due_today"] == expected["due_today"] and body["by_step"] == expected["by_step"]
    assert [day["count"] for day in body["forecast"]] == [
        day["count"] for day in expected["forecast"]
    ]
    assert expected["due_today"] > 0 or pause_days
    assert_exact()


# --- PostgreSQL: concurrent writers and TRUNCATE ------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_reviews_leave_the_counts_exact(make_user):
    users = [make_user(f"busy{i}") for i in range(2)]
    deck = Deck.objects.create(slug="busy", title="Busy")
    cards = [Card.objects.create(deck=deck, kind="recall", prompt=f"Q{i}") for i in range(8)]
    with time_machine.travel(START, tick=False):
        for user in users:
            services.enroll(learner=user, deck=deck, at=START)
    tokens = [Token.objects.get_or_create(user=user)[0].key for user in users]
    jobs = [
        (token, card, "pass" if i % 3 else "fail")
        for token in tokens
        for i, card in enumerate(cards)
    ]
    with time_machine.travel(DAY1, tick=True):
        statuses = in_threads(jobs, post_review)
    assert statuses == [201] * len(jobs)
    counts = assert_exact()
    assert sorted(counts.values()) == [3, 3, 5, 5]  # per learner: 3 failed, 5 passed


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_truncating_the_states_empties_the_counts(learner, deck):
    services.enroll(learner=learner, deck=deck, at=START)
    assert ReviewStateCount.objects.exists()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE cards_reviewstate")
    assert not ReviewStateCount.objects.exists()


# --- The migration's backfill -------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_migration_backfills_the_counts_and_is_reversible(learner, other_learner, deck):
    from .old_chain import chain_executor, migrate_to_latest

    services.enroll(learner=learner, deck=deck, at=START)
    services.enroll(learner=other_learner, deck=deck, at=START)
    first = deck.cards.order_by("id").first()
    ReviewState.objects.filter(learner=learner, card=first).update(suspended=True, step=2)
    ReviewState.objects.filter(learner=other_learner, card=first).update(scheduled=False)
    expected = assert_exact()
    assert len(expected) == 3
    executor = chain_executor(connection)
    executor.migrate([("cards", "0008_review_day")])
    try:
        # Without the triggers, writes go uncounted until the migration backfills them.
        ReviewState.objects.filter(learner=learner).exclude(card=first).update(step=3)
        expected = recount()
        executor = chain_executor(connection)
        executor.migrate([("cards", "0009_review_state_counts")])
        assert stored() == expected
        migration = importlib.import_module("cards.migrations.0009_review_state_counts")
        assert migration.Migration.operations[-1].reversible
    finally:
        # As manage.py migrate would: part of the way, the database finishes the old chain.
        migrate_to_latest(connection)
    # The triggers are back: a write is counted.
    ReviewState.objects.filter(learner=learner, card=first).update(suspended=False)
    assert_exact()
