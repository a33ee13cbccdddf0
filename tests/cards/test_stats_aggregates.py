"""The per-day review counts (``ReviewDay``) agree with the log after every kind of write."""

import datetime as dt
import importlib
from collections import defaultdict

import numpy as np
import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.db import connection
from rest_framework.authtoken.models import Token

from cards.models import Card, Deck, ReviewDay, ReviewLog, ReviewState
from cards.selectors import review_calendar
from cards.services import enroll, review_record
from cards.services.privacy import DELETED_LEARNERS_USERNAME
from cards.services.review_days import review_days_rebuild
from exercises.models import Exercise
from tests.cards.concurrency import in_threads, post_review

START = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)
DAY1 = START + dt.timedelta(days=1)


def from_log(learner) -> dict[dt.date, tuple[int, int, dt.date | None]]:
    """The day rows recomputed from the log in Python, independently of the SQL."""
    logs = list(ReviewLog.objects.filter(learner=learner))
    undone = {log.undo_of_id for log in logs if log.undo_of_id}
    days: dict = defaultdict(lambda: [0, 0, None])
    for log in logs:
        row = days[log.study_day]
        sign = -1 if log.undo_of_id else 1
        row[0] += sign
        row[1] += sign if log.result == "pass" else 0
        if not log.undo_of_id and log.pk not in undone:
            row[2] = log.due_before if row[2] is None else min(row[2], log.due_before)
    return {day: tuple(row) for day, row in days.items()}


def stored(learner) -> dict[dt.date, tuple[int, int, dt.date | None]]:
    return {
        row.study_day: (row.reviews, row.passes, row.min_due_before)
        for row in ReviewDay.objects.filter(learner=learner)
    }


def recall_ids(deck) -> list[int]:
    return list(deck.cards.filter(kind="recall").order_by("id").values_list("id", flat=True))


def review(api, card_id: int, result: str) -> dict:
    response = api.post("/api/v1/reviews/", {"card": card_id, "result": result}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


@pytest.mark.django_db
def test_passes_and_fails_are_counted_in_their_day(api, learner, deck):
    with time_machine.travel(START, tick=False) as traveller:
        api.post("/api/v1/decks/attention/enroll/")
        first, second, third = recall_ids(deck)
        ReviewState.objects.filter(learner=learner, card_id=third).update(
            due_on=dt.date(2026, 2, 20)
        )
        traveller.move_to(DAY1)
        review(api, first, "pass")
        review(api, second, "fail")
        review(api, third, "pass")
        stats = api.get("/api/v1/stats/").json()
    assert (
        stored(learner) == from_log(learner) == {dt.date(2026, 3, 3): (3, 2, dt.date(2026, 2, 20))}
    )
    assert stats["reviewed_today"] == 3 and stats["retention_30d"] == pytest.approx(2 / 3, 1e-3)


@pytest.mark.django_db
def test_an_undo_takes_the_review_out_of_its_day(api, learner, deck):
    with time_machine.travel(START, tick=False) as traveller:
        api.post("/api/v1/decks/attention/enroll/")
        first, second, _ = recall_ids(deck)
        ReviewState.objects.filter(learner=learner, card_id=first).update(
            due_on=dt.date(2026, 2, 20)
        )
        traveller.move_to(DAY1)
        early = review(api, first, "pass")
        review(api, second, "fail")
        assert stored(learner)[dt.date(2026, 3, 3)] == (2, 1, dt.date(2026, 2, 20))
        # Undoing the review of the card due earliest moves the day's earliest due date on.
        assert api.post(f"/api/v1/reviews/{early['id']}/undo/").status_code == 200
        assert stored(learner) == from_log(learner)
        assert stored(learner)[dt.date(2026, 3, 3)] == (1, 0, dt.date(2026, 3, 3))
        stats = api.get("/api/v1/stats/").json()
        assert stats["reviewed_today"] == 1 and stats["retention_30d"] == 0
        # Reviewed again, then everything undone: the day is empty and so is the streak.
        again = review(api, first, "pass")
        assert api.post(f"/api/v1/reviews/{again['id']}/undo/").status_code == 200
        last = ReviewLog.objects.filter(learner=learner, undo_of=None, card_id=second).get()
        assert api.post(f"/api/v1/reviews/{last.pk}/undo/").status_code == 200
        assert stored(learner) == from_log(learner) == {dt.date(2026, 3, 3): (0, 0, None)}
        stats = api.get("/api/v1/stats/").json()
    assert (stats["reviewed_today"], stats["streak_days"], stats["retention_30d"]) == (0, 0, None)
    assert api.get("/api/v1/stats/").status_code == 200


@pytest.fixture
def drill_deck(db):
    deck = Deck.objects.create(slug="drills", title="Drills")
    Card.objects.create(
        deck=deck,
        kind="exercise",
        prompt="Compute one head by hand",
        exercise={"kind": "attention", "params": {}},
    )
    return deck


@pytest.mark.django_db
def test_an_exercise_review_and_its_undo_are_counted(api, learner, drill_deck):
    with time_machine.travel(START, tick=False) as traveller:
        api.post("/api/v1/decks/drills/enroll/")
        traveller.move_to(DAY1)
        exercise = api.get("/api/v1/reviews/due/").json()["results"][0]["exercise"]
        solution = Exercise.objects.get(pk=exercise["id"]).solution
        wrong = {part: (np.asarray(v) + 1.0).tolist() for part, v in solution.items()}
        body = api.post(
            f"/api/v1/exercises/{exercise['id']}/submit/", {"answers": wrong}, format="json"
        ).json()
        assert body["review"]["result"] == "fail"
        assert stored(learner) == from_log(learner) == {dt.date(2026, 3, 3): (1, 0, DAY1.date())}
        undo = api.post(f"/api/v1/reviews/{body['review']['id']}/undo/")
        assert undo.status_code == 200, undo.content
        assert stored(learner) == from_log(learner) == {dt.date(2026, 3, 3): (0, 0, None)}
        # The card's repeated review gets a fresh exercise, counted again.
        fresh = api.get("/api/v1/reviews/due/").json()["results"][0]["exercise"]
        solution = Exercise.objects.get(pk=fresh["id"]).solution
        body = api.post(
            f"/api/v1/exercises/{fresh['id']}/submit/", {"answers": solution}, format="json"
        ).json()
        assert body["review"]["result"] == "pass"
    assert stored(learner) == from_log(learner) == {dt.date(2026, 3, 3): (1, 1, DAY1.date())}


@pytest.mark.django_db
def test_deleted_accounts_days_are_merged_into_the_deleted_learners_account(
    api, other_api, learner, other_learner, deck
):
    with time_machine.travel(START, tick=False) as traveller:
        for client in (api, other_api):
            client.post("/api/v1/decks/attention/enroll/")
        first, second, _ = recall_ids(deck)
        ReviewState.objects.filter(learner=learner, card_id=first).update(
            due_on=dt.date(2026, 2, 1)
        )
        traveller.move_to(DAY1)
        review(api, first, "pass")
        review(api, second, "fail")
        review(other_api, first, "pass")
        traveller.move_to(DAY1 + dt.timedelta(days=1))
        review(other_api, second, "fail")
        for client in (api, other_api):
            response = client.delete("/api/v1/me/", {"password": "s3cret-pass!"}, format="json")
            assert response.status_code == 204, response.content
    holder = get_user_model().objects.get(username=DELETED_LEARNERS_USERNAME)
    assert (
        stored(holder)
        == from_log(holder)
        == {
            dt.date(2026, 3, 3): (3, 2, dt.date(2026, 2, 1)),
            dt.date(2026, 3, 4): (1, 0, dt.date(2026, 3, 3)),
        }
    )
    assert ReviewDay.objects.exclude(learner=holder).count() == 0


@pytest.mark.django_db
def test_a_rebuild_from_the_log_gives_what_the_services_kept(api, learner, other_learner, deck):
    with time_machine.travel(START, tick=False) as traveller:
        api.post("/api/v1/decks/attention/enroll/")
        traveller.move_to(DAY1)
        done = [review(api, card_id, "pass") for card_id in recall_ids(deck)]
        api.post(f"/api/v1/reviews/{done[-1]['id']}/undo/")
    kept = stored(learner)
    ReviewDay.objects.create(learner=other_learner, study_day=START.date(), reviews=9)
    assert review_days_rebuild(learners=get_user_model().objects.filter(pk=learner.pk)) == 1
    assert stored(learner) == kept == from_log(learner)
    assert ReviewDay.objects.filter(learner=other_learner).count() == 1  # left alone
    review_days_rebuild()
    assert stored(learner) == kept and not ReviewDay.objects.filter(learner=other_learner).exists()


@pytest.mark.django_db
def test_the_calendar_page_reads_the_day_rows(client, learner, deck):
    with time_machine.travel(START, tick=False) as traveller:
        enroll(learner=learner, deck=deck, at=START)
        traveller.move_to(DAY1)
        client.force_login(learner)
        for card_id in recall_ids(deck):
            review_record(learner=learner, card=card_id, result="pass", at=DAY1)
        page = client.get("/")
    assert page.status_code == 200
    assert review_calendar(learner=learner, start=START.date(), end=DAY1.date()) == {DAY1.date(): 3}


# --- Concurrency, on PostgreSQL ---------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_reviews_of_one_learner_are_all_counted(make_user):
    user = make_user("busy")
    deck = Deck.objects.create(slug="busy", title="Busy")
    cards = [Card.objects.create(deck=deck, kind="recall", prompt=f"Q{i}") for i in range(6)]
    with time_machine.travel(START, tick=False):
        enroll(learner=user, deck=deck, at=START)
    token = Token.objects.get_or_create(user=user)[0].key
    jobs = [(token, card, "pass" if i % 2 else "fail") for i, card in enumerate(cards)]
    with time_machine.travel(DAY1, tick=True):
        statuses = in_threads(jobs, post_review)
    assert statuses == [201] * len(cards)
    assert stored(user) == from_log(user) == {DAY1.date(): (6, 3, DAY1.date())}


# --- The migration's backfill -------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_migration_backfills_the_days_from_the_log(learner, deck):
    from .old_chain import chain_executor, migrate_to_latest

    card = deck.cards.first()
    day = START.date()

    def log(**fields):
        base = dict(
            learner=learner,
            card=card,
            reviewed_at=START,
            study_day=day,
            result="pass",
            step_before=0,
            step_after=1,
            interval_days=3,
            due_before=day - dt.timedelta(days=2),
            due_after=day + dt.timedelta(days=3),
        )
        return ReviewLog.objects.create(**{**base, **fields})

    undone = log(due_before=day - dt.timedelta(days=5))
    log(undo_of=undone, due_before=day + dt.timedelta(days=3), due_after=day - dt.timedelta(5))
    log(result="fail")
    log(study_day=day + dt.timedelta(days=1), due_before=day + dt.timedelta(days=1))
    expected = from_log(learner)
    assert expected == {
        day: (1, 0, day - dt.timedelta(days=2)),
        day + dt.timedelta(days=1): (1, 1, day + dt.timedelta(days=1)),
    }
    executor = chain_executor(connection)
    executor.migrate([("cards", "0007_database_defaults_for_raw_inserts")])
    try:
        executor = chain_executor(connection)
        executor.migrate([("cards", "0008_review_day")])
        assert stored(learner) == expected
        # Reversible: back to 0007 drops the table, forward again fills it again.
        migration = importlib.import_module("cards.migrations.0008_review_day")
        assert migration.Migration.operations[-1].reversible
    finally:
        # As manage.py migrate would: part of the way, the database finishes the old chain.
        migrate_to_latest(connection)
    assert stored(learner) == expected
