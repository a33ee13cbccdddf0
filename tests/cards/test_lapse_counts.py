"""The lapse counts kept by the database equal a recount of the review log after every write.

The counts (``LapseCount``, kept by triggers from migration 0010) must equal the failed
log entries per (learner, card), an undo entry counting -1, whoever wrote the log;
the leeches of stats/, the due page's ``leech`` flag and the card pages read them.
"""

from __future__ import annotations

import datetime as dt
import importlib
import random
from collections import defaultdict

import numpy as np
import pytest
import time_machine
from django.db import connection
from rest_framework.authtoken.models import Token

from cards import services
from cards.lapses import leech_card_ids
from cards.models import Card, Deck, LapseCount, ReviewLog
from cards.services.privacy import DELETED_LEARNERS_USERNAME
from exercises.models import Exercise
from tests.cards.concurrency import in_threads, post_review

from .conftest import START, log_entry

pytestmark = pytest.mark.django_db
DAY1 = START + dt.timedelta(days=1)  # the enrolled cards are due
PASSWORD = "s3cret-pass!"  # make_user's


def recount() -> dict[tuple[int, int], int]:
    """The log's failed entries per (learner, card) net of undos, summed in Python."""
    counts: dict[tuple[int, int], int] = defaultdict(int)
    rows = ReviewLog.objects.values_list("learner_id", "card_id", "result", "undo_of_id")
    for learner_id, card_id, result, undo_of_id in rows:
        if result == ReviewLog.Result.FAIL:
            counts[(learner_id, card_id)] += -1 if undo_of_id else 1
    return {key: n for key, n in counts.items() if n}


def stored() -> dict[tuple[int, int], int]:
    rows = LapseCount.objects.values_list("learner_id", "card_id", "n")
    counts = {(learner_id, card_id): n for learner_id, card_id, n in rows}
    assert len(counts) == len(rows)
    return counts


def assert_exact() -> dict[tuple[int, int], int]:
    expected = recount()
    assert stored() == expected
    # Zero counts are deleted by the trigger that empties them.
    assert not LapseCount.objects.filter(n=0).exists()
    return expected


def review(api, card_id, result) -> dict:
    response = api.post("/api/v1/reviews/", {"card": card_id, "result": result}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def leech_flags(api) -> dict[int, bool]:
    body = api.get("/api/v1/reviews/due/?page_size=100").json()
    return {item["card"]["id"]: item["leech"] for item in body["results"]}


def test_reviews_undos_and_account_deletion_keep_the_counts_exact(
    api, other_api, learner, other_learner, deck, settings
):
    settings.STUDY_LEECH_LAPSES = 2
    recall = list(deck.cards.filter(kind="recall").order_by("id"))
    with time_machine.travel(START, tick=False) as traveller:
        for client in (api, other_api):
            assert client.post("/api/v1/decks/attention/enroll/").status_code == 200
        traveller.move_to(DAY1)
        review(api, recall[0].id, "fail")
        review(api, recall[1].id, "pass")
        undone = review(api, recall[2].id, "fail")
        review(other_api, recall[0].id, "fail")
        assert assert_exact() == {
            (learner.pk, recall[0].id): 1,
            (learner.pk, recall[2].id): 1,
            (other_learner.pk, recall[0].id): 1,
        }
        # Undoing a fail takes its lapse off, and the emptied count goes.
        assert api.post(f"/api/v1/reviews/{undone['id']}/undo/").status_code == 200
        assert (learner.pk, recall[2].id) not in assert_exact()

        traveller.move_to(DAY1 + dt.timedelta(days=1))
        review(api, recall[0].id, "fail")  # the second lapse: a leech
        assert assert_exact()[(learner.pk, recall[0].id)] == 2
        assert api.get("/api/v1/stats/").json()["leech_cards"] == [recall[0].id]
        assert other_api.get("/api/v1/stats/").json()["leech_cards"] == []
        traveller.move_to(DAY1 + dt.timedelta(days=2))
        assert leech_flags(api)[recall[0].id] is True
        assert not any(leech for card, leech in leech_flags(other_api).items())

        # Deleting the account moves the log, and its lapses with it, to the holder.
        response = api.delete("/api/v1/me/", {"password": PASSWORD}, format="json")
        assert response.status_code == 204, response.content
    counts = assert_exact()
    holder = learner.__class__.objects.get(username=DELETED_LEARNERS_USERNAME)
    assert counts == {(holder.pk, recall[0].id): 2, (other_learner.pk, recall[0].id): 1}
    assert not LapseCount.objects.filter(learner_id=learner.pk).exists()


def test_an_exercise_review_failed_is_a_lapse(api, learner):
    deck = Deck.objects.create(slug="drills", title="Drills")
    card = Card.objects.create(
        deck=deck,
        kind="exercise",
        prompt="Compute one head by hand",
        exercise={"kind": "attention", "params": {"seed": 7}},
    )
    with time_machine.travel(START, tick=False):
        api.post("/api/v1/decks/drills/enroll/")
    with time_machine.travel(DAY1, tick=False):
        (item,) = api.get("/api/v1/reviews/due/").json()["results"]
        exercise = Exercise.objects.get(pk=item["exercise"]["id"])
        wrong = {part: (np.asarray(v) + 1.0).tolist() for part, v in exercise.solution.items()}
        response = api.post(
            f"/api/v1/exercises/{exercise.pk}/submit/", {"answers": wrong}, format="json"
        )
        assert response.json()["review"]["result"] == "fail"
    assert assert_exact() == {(learner.pk, card.pk): 1}


def test_bulk_and_raw_writes_are_counted(learner, other_learner, deck):
    cards = list(deck.cards.order_by("id"))
    logs = ReviewLog.objects.bulk_create(
        log_entry(learner, card, "fail" if i % 3 else "pass") for i, card in enumerate(cards * 3)
    )
    assert sum(assert_exact().values()) == 8
    # An undo entry written in bulk, then one made an undo by an UPDATE.
    ReviewLog.objects.bulk_create([log_entry(learner, logs[1].card, undo_of=logs[1])])
    ReviewLog.objects.bulk_create([log_entry(learner, logs[2].card)])
    ReviewLog.objects.filter(pk=ReviewLog.objects.latest("id").pk).update(undo_of=logs[2])
    assert sum(assert_exact().values()) == 6
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO cards_reviewlog (learner_id, card_id, reviewed_at, study_day, result,"
            " step_before, step_after, interval_days, due_before, due_after, idempotency_key)"
            " SELECT %s, id, %s, %s, 'fail', 0, 0, 1, %s, %s, '' FROM cards_card"
            " WHERE deck_id = %s",
            [other_learner.pk, START, START.date(), START.date(), START.date(), deck.pk],
        )
        cursor.execute("UPDATE cards_reviewlog SET result = 'pass' WHERE id = %s", [logs[4].pk])
    assert sum(assert_exact().values()) == 9
    # Updates that keep the keys change nothing; one moving a learner moves the lapses.
    before = assert_exact()
    ReviewLog.objects.update(idempotency_key="k", interval_days=3)
    assert assert_exact() == before
    ReviewLog.objects.filter(learner=other_learner).update(learner=learner)
    assert {key[0] for key in assert_exact()} == {learner.pk}
    # Deleting an undo entry gives its lapse back; deleting a card keeps its log.
    ReviewLog.objects.filter(undo_of=logs[1]).delete()
    assert_exact()
    key = (learner.pk, cards[1].pk)
    kept = assert_exact()[key]
    cards[1].delete()
    assert assert_exact()[key] == kept
    ReviewLog.objects.all().delete()
    assert assert_exact() == {} and not LapseCount.objects.exists()


def test_the_counts_are_read_only_from_django(learner, deck):
    ReviewLog.objects.bulk_create([log_entry(learner, deck.cards.first())])
    row = LapseCount.objects.get()
    assert row.n == 1
    with pytest.raises(TypeError, match="kept by the database"):
        row.save()
    with pytest.raises(TypeError, match="kept by the database"):
        row.delete()


# --- The leeches read from the counts equal the leeches summed over the log ---------------


def test_leeches_equal_a_sum_over_the_log(learner, other_learner, settings):
    settings.STUDY_LEECH_LAPSES = 3
    deck = Deck.objects.create(slug="wide", title="Wide")
    cards = Card.objects.bulk_create(
        Card(deck=deck, kind="recall", prompt=f"P{i}", position=i) for i in range(40)
    )
    rng = random.Random(11)
    logs = ReviewLog.objects.bulk_create(
        log_entry(
            rng.choice((learner, other_learner)),
            rng.choice(cards),
            rng.choice(("fail", "pass", "fail")),
        )
        for _ in range(400)
    )
    fails = [log for log in logs if log.result == "fail"]
    ReviewLog.objects.bulk_create(
        log_entry(log.learner, log.card, undo_of=log) for log in rng.sample(fails, 60)
    )
    counts = assert_exact()
    expected = {card for (who, card), n in counts.items() if who == learner.pk and n >= 3}
    assert expected and len(expected) < len(cards)
    assert leech_card_ids(learner=learner) == expected
    some = [card.pk for card in cards[:20]]
    assert leech_card_ids(learner=learner, card_ids=some) == expected & set(some)
    in_sql = Card.objects.filter(pk__in=some).values("pk")
    assert leech_card_ids(learner=learner, card_ids=in_sql) == expected & set(some)


# --- A check that cannot fail is no check: without a trigger the counts drift -------------


def _drop_trigger(event: str) -> None:
    name = f"cards_lapsecount_{event}"
    on = " ON cards_reviewlog" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TRIGGER {name}{on}")


@pytest.mark.parametrize("event", ["insert", "update", "delete"])
def test_without_a_trigger_the_recount_tells(learner, other_learner, deck, event):
    card = deck.cards.first()
    logs = ReviewLog.objects.bulk_create([log_entry(learner, card), log_entry(learner, card)])
    assert_exact()
    _drop_trigger(event)  # rolled back with the test's transaction
    if event == "insert":
        ReviewLog.objects.bulk_create([log_entry(learner, card)])
    elif event == "update":
        ReviewLog.objects.filter(pk=logs[0].pk).update(learner=other_learner)
    else:
        ReviewLog.objects.filter(pk=logs[0].pk).delete()
    with pytest.raises(AssertionError):
        assert_exact()


# --- PostgreSQL: concurrent writers and TRUNCATE ------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_fails_leave_the_counts_exact(make_user):
    users = [make_user(f"busy{i}") for i in range(2)]
    deck = Deck.objects.create(slug="busy", title="Busy")
    cards = [Card.objects.create(deck=deck, kind="recall", prompt=f"Q{i}") for i in range(6)]
    with time_machine.travel(START, tick=False):
        for user in users:
            services.enroll(learner=user, deck=deck, at=START)
    tokens = [Token.objects.get_or_create(user=user)[0].key for user in users]

    with time_machine.travel(DAY1, tick=True):
        statuses = in_threads([(t, c, "fail") for t in tokens for c in cards], post_review)
    assert statuses == [201] * 12
    assert set(assert_exact().values()) == {1}

    # Multi-row statements over the same keys in opposite orders: the upserts lock the
    # count rows in key order, so they queue behind each other instead of deadlocking.
    def load(order):
        pairs = [(user, card) for user in users for card in cards][::order]
        return len(ReviewLog.objects.bulk_create(log_entry(u, c) for u, c in pairs * 5))

    results = in_threads([(1,), (-1,), (1,), (-1,)], load)
    assert results == [60] * 4
    counts = assert_exact()
    assert len(counts) == 12 and set(counts.values()) == {21}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_truncating_the_log_empties_the_counts(learner, deck):
    ReviewLog.objects.bulk_create([log_entry(learner, deck.cards.first())])
    assert LapseCount.objects.exists()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE cards_reviewlog, cards_exercisebinding, cards_labbinding")
    assert not LapseCount.objects.exists()


# --- The migration's backfill -------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_migration_backfills_the_counts_and_is_reversible(learner, other_learner, deck):
    from django.core.management.sql import emit_post_migrate_signal

    from .old_chain import chain_executor, migrate_to_latest

    cards = list(deck.cards.order_by("id"))
    logs = ReviewLog.objects.bulk_create(
        log_entry(who, card) for who in (learner, other_learner) for card in cards
    )
    executor = chain_executor(connection)
    executor.migrate([("cards", "0009_review_state_counts")])
    try:
        # Without the triggers, writes go uncounted until the migration backfills them.
        # Written through the log's model as it stood then (later columns do not exist yet).
        OldLog = executor.loader.project_state(
            ("cards", "0009_review_state_counts")
        ).apps.get_model("cards", "ReviewLog")
        OldLog.objects.bulk_create(
            OldLog(
                **{
                    f.attname: getattr(entry, f.attname)
                    for f in OldLog._meta.concrete_fields
                    if not f.primary_key
                }
            )
            for entry in (
                log_entry(learner, cards[0]),
                log_entry(learner, cards[1], undo_of=logs[1]),
            )
        )
        ReviewLog.objects.filter(pk=logs[2].pk).update(result="pass")
        expected = recount()
        assert len(expected) == 6 and expected[(learner.pk, cards[0].pk)] == 2
        executor = chain_executor(connection)
        executor.migrate([("cards", "0010_lapse_counts")])
        assert stored() == expected
        migration = importlib.import_module("cards.migrations.0010_lapse_counts")
        assert migration.Migration.operations[-1].reversible
    finally:
        # As manage.py migrate would: part of the way, the database finishes the old chain,
        # then post_migrate runs (on SQLite it puts back the triggers a table rebuild of a
        # later migration dropped: cards.db.count_checks).
        migrate_to_latest(connection)
        emit_post_migrate_signal(verbosity=0, interactive=False, db=connection.alias)
    # The triggers are back: a write is counted.
    ReviewLog.objects.bulk_create([log_entry(other_learner, cards[3])])
    assert_exact()
