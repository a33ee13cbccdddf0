"""The item analysis's figures kept by the database equal a recount of the review log
(and of the exercise attempts) after every write.

``LearnerCardFigures`` (per learner and card: the reviews no undo cancelled, their passes
and fails, whether the first passed) and ``CardFigures`` (those summed per card and
lapse count) are kept by triggers from migration 0013; the staff's item analysis reads
them. Here they are recounted in Python from the log after each write path: the review,
undo and exercise services through the API, account deletion, card deactivation and
deletion, bulk and raw SQL writes, on SQLite and PostgreSQL. ``ExerciseKindFigures``
(the attempts' verdicts counted per exercise kind) likewise against the attempts.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import random
from collections import defaultdict

import numpy as np
import pytest
import time_machine
from django.db import connection
from django.test import Client
from rest_framework.authtoken.models import Token

from cards import item_analysis, services
from cards.models import (
    Card,
    CardFigures,
    Deck,
    ExerciseKindFigures,
    LearnerCardFigures,
    ReviewLog,
)
from cards.services.privacy import DELETED_LEARNERS_USERNAME
from exercises.checking import MISTAKES
from exercises.kinds import get_kind
from exercises.models import Attempt, Exercise
from exercises.services import exercise_create
from tests.cards.concurrency import in_threads, post_review

from .conftest import START, log_entry

pytestmark = pytest.mark.django_db
DAY1 = START + dt.timedelta(days=1)  # the enrolled cards are due
PASSWORD = "s3cret-pass!"  # make_user's

Pair = tuple[int, int, int, int]  # reviews, passes, lapses, first_pass


def recount_pairs() -> dict[tuple[int, int], Pair]:
    """Per (learner, card): the reviews no undo cancelled, passes, fails, first passed."""
    rows = list(ReviewLog.objects.values_list("id", "learner_id", "card_id", "result", "undo_of"))
    undone = {undo_of for *_, undo_of in rows if undo_of is not None}
    kept: dict[tuple[int, int], list[tuple[int, str]]] = defaultdict(list)
    for pk, learner_id, card_id, result, undo_of in rows:
        if undo_of is None and pk not in undone:
            kept[(learner_id, card_id)].append((pk, result))
    pairs = {}
    for key, reviews in kept.items():
        results = [result for _, result in sorted(reviews)]
        pairs[key] = (
            len(results),
            results.count("pass"),
            results.count("fail"),
            int(results[0] == "pass"),
        )
    return pairs


def recount_cards(pairs: dict[tuple[int, int], Pair]) -> dict[tuple[int, int], Pair]:
    """Per (card, lapses): learners, reviews, passes, first passes."""
    cards: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for (_, card_id), (reviews, passes, lapses, first_pass) in pairs.items():
        sums = cards[(card_id, lapses)]
        for i, value in enumerate((1, reviews, passes, first_pass)):
            sums[i] += value
    return {key: (s[0], s[1], s[2], s[3]) for key, s in cards.items()}


def stored_pairs() -> dict[tuple[int, int], Pair]:
    rows = LearnerCardFigures.objects.values_list(
        "learner_id", "card_id", "reviews", "passes", "lapses", "first_pass"
    )
    return {(r[0], r[1]): (r[2], r[3], r[4], r[5]) for r in rows}


def stored_cards() -> dict[tuple[int, int], Pair]:
    rows = CardFigures.objects.values_list(
        "card_id", "lapses", "learners", "reviews", "passes", "first_passes"
    )
    return {(r[0], r[1]): (r[2], r[3], r[4], r[5]) for r in rows}


def assert_exact() -> dict[tuple[int, int], Pair]:
    """The kept figures equal the recount; returns the pairs."""
    pairs = recount_pairs()
    assert stored_pairs() == pairs
    assert stored_cards() == recount_cards(pairs)
    return pairs


def review(api, card_id, result) -> dict:
    response = api.post("/api/v1/reviews/", {"card": card_id, "result": result}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def staff_client(staff) -> Client:
    client = Client()
    client.force_login(staff)
    return client


def csv_rows(client, query="") -> list[dict[str, str]]:
    response = client.get(f"/admin/cards/cardanalysis/csv/{query}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


# --- Every write path keeps the figures exact ----------------------------------------------


def test_reviews_undos_deactivation_and_account_deletion_keep_the_figures_exact(
    api, other_api, learner, other_learner, deck, staff, settings
):
    settings.STUDY_LEECH_LAPSES = 2
    recall = list(deck.cards.filter(kind="recall").order_by("id"))
    with time_machine.travel(START, tick=False) as traveller:
        for client in (api, other_api):
            assert client.post("/api/v1/decks/attention/enroll/").status_code == 200
        traveller.move_to(DAY1)
        first = review(api, recall[0].id, "pass")
        review(other_api, recall[0].id, "fail")
        review(api, recall[1].id, "fail")
        assert assert_exact() == {
            (learner.pk, recall[0].id): (1, 1, 0, 1),
            (other_learner.pk, recall[0].id): (1, 0, 1, 0),
            (learner.pk, recall[1].id): (1, 0, 1, 0),
        }
        # Undoing the only review of a pair takes the pair away, and its card's row.
        assert api.post(f"/api/v1/reviews/{first['id']}/undo/").status_code == 200
        assert (learner.pk, recall[0].id) not in assert_exact()
        assert stored_cards()[(recall[0].id, 1)] == (1, 1, 0, 0)
        assert (recall[0].id, 0) not in stored_cards()
        # The review done again after the undo is now the pair's first: a fail.
        review(api, recall[0].id, "fail")
        assert assert_exact()[(learner.pk, recall[0].id)] == (1, 0, 1, 0)

        traveller.move_to(DAY1 + dt.timedelta(days=1))
        review(api, recall[0].id, "fail")  # the second lapse: a leech
        review(api, recall[1].id, "pass")
        assert assert_exact()[(learner.pk, recall[0].id)] == (2, 0, 2, 0)
        rows, _ = item_analysis.card_analysis()
        row = next(r for r in rows if r.card == recall[0].id)
        assert (row.learners, row.reviews, row.lapses, row.leeches) == (2, 3, 3, 1)
        assert row.first_pass_rate == 0.0

        # Deactivating a card keeps its log and so its figures; the page marks it.
        before = assert_exact()
        assert services.cards_set_active(card_ids=[recall[1].id], active=False) == 1
        assert assert_exact() == before
        client = staff_client(staff)
        (exported,) = [r for r in csv_rows(client) if r["card"] == str(recall[1].id)]
        assert (exported["active"], exported["reviews"], exported["lapses"]) == ("0", "2", "1")

        # Deleting the account moves its log, and its figures with it, to the holder.
        response = api.delete("/api/v1/me/", {"password": PASSWORD}, format="json")
        assert response.status_code == 204, response.content
    pairs = assert_exact()
    holder = learner.__class__.objects.get(username=DELETED_LEARNERS_USERNAME)
    assert pairs[(holder.pk, recall[0].id)] == (2, 0, 2, 0)
    assert not LearnerCardFigures.objects.filter(learner_id=learner.pk).exists()


def test_an_exercise_review_is_counted(api, learner):
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
    assert assert_exact() == {(learner.pk, card.pk): (1, 0, 1, 0)}
    assert stored_cards() == {(card.pk, 1): (1, 1, 0, 0)}


def test_bulk_and_raw_writes_are_counted(learner, other_learner, deck):
    cards = list(deck.cards.order_by("id"))
    logs = ReviewLog.objects.bulk_create(
        log_entry(learner, card, "fail" if i % 3 else "pass") for i, card in enumerate(cards * 3)
    )
    assert sum(p[0] for p in assert_exact().values()) == 12
    # Undoing a pair's first review makes its next review the first.
    first = logs[0]
    ReviewLog.objects.bulk_create([log_entry(learner, first.card, undo_of=first)])
    assert assert_exact()[(learner.pk, first.card_id)][3] == 0
    # An entry made an undo by an UPDATE, then made a review again.
    ReviewLog.objects.bulk_create([log_entry(learner, logs[2].card)])
    latest = ReviewLog.objects.latest("id").pk
    ReviewLog.objects.filter(pk=latest).update(undo_of=logs[2])
    assert_exact()
    ReviewLog.objects.filter(pk=latest).update(undo_of=None)
    assert_exact()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO cards_reviewlog (learner_id, card_id, reviewed_at, study_day, result,"
            " step_before, step_after, interval_days, due_before, due_after, idempotency_key)"
            " SELECT %s, id, %s, %s, 'pass', 0, 0, 1, %s, %s, '' FROM cards_card"
            " WHERE deck_id = %s",
            [other_learner.pk, START, START.date(), START.date(), START.date(), deck.pk],
        )
        cursor.execute("UPDATE cards_reviewlog SET result = 'pass' WHERE id = %s", [logs[4].pk])
    assert_exact()
    # Updates that keep the keys change nothing; one moving a learner merges the pairs.
    before = assert_exact()
    ReviewLog.objects.update(idempotency_key="k", interval_days=3)
    assert assert_exact() == before
    ReviewLog.objects.filter(learner=other_learner).update(learner=learner)
    assert {key[0] for key in assert_exact()} == {learner.pk}
    # Moving a review to another card moves it between the cards' rows.
    ReviewLog.objects.filter(pk=logs[5].pk).update(card=cards[0])
    assert_exact()
    # Deleting an undo entry gives its review back; deleting a card keeps its log.
    ReviewLog.objects.filter(undo_of=first).delete()
    assert assert_exact()[(learner.pk, first.card_id)][3] == 1
    key = (learner.pk, cards[1].pk)
    kept = assert_exact()[key]
    cards[1].delete()
    assert assert_exact()[key] == kept
    ReviewLog.objects.all().delete()
    assert assert_exact() == {}
    assert not LearnerCardFigures.objects.exists() and not CardFigures.objects.exists()


def test_random_logs_with_undos_and_deletes_stay_exact(learner, other_learner, make_user):
    deck = Deck.objects.create(slug="wide", title="Wide")
    cards = Card.objects.bulk_create(
        Card(deck=deck, kind="recall", prompt=f"P{i}", position=i) for i in range(30)
    )
    learners = [learner, other_learner, make_user("third")]
    rng = random.Random(5)
    # Statements of more than 64 rows are planned afresh (EXECUTE); smaller ones run the
    # session's kept plans: both are held to the recount.
    for size in (150, 20, 150, 20):
        logs = ReviewLog.objects.bulk_create(
            log_entry(rng.choice(learners), rng.choice(cards), rng.choice(("fail", "pass")))
            for _ in range(size)
        )
        undone = rng.sample(logs, size // 2)
        ReviewLog.objects.bulk_create(
            log_entry(log.learner, log.card, undo_of=log) for log in undone
        )
        assert_exact()
        gone = rng.sample([log.pk for log in logs], size // 3)
        ReviewLog.objects.filter(pk__in=gone).delete()
        assert_exact()
    # The page's figures are the card rows summed; the leeches follow the threshold.
    pairs = assert_exact()
    rows, total = item_analysis.card_analysis(limit=None)
    assert total == len(rows) == len(cards)
    for row in rows:
        mine = {k: v for k, v in pairs.items() if k[1] == row.card}
        assert row.learners == len(mine)
        assert row.reviews == sum(v[0] for v in mine.values())
        assert row.lapses == sum(v[2] for v in mine.values())
        assert row.first_reviews == len(mine)
        assert row.leeches == sum(1 for v in mine.values() if v[2] >= 8)


def test_the_figures_are_read_only_from_django(learner, deck):
    ReviewLog.objects.bulk_create([log_entry(learner, deck.cards.first())])
    for row in (LearnerCardFigures.objects.get(), CardFigures.objects.get()):
        with pytest.raises(TypeError, match="kept by the database"):
            row.save()
        with pytest.raises(TypeError, match="kept by the database"):
            row.delete()


# --- A check that cannot fail is no check: without a trigger the figures drift ------------


_PAIRS = "cards_learnercardfigures"


def _move_pairs_up() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {_PAIRS} SET lapses = lapses + 1, reviews = reviews + 1")


def test_the_card_sums_follow_any_write_to_the_pairs(learner, other_learner, deck):
    cards = list(deck.cards.order_by("id"))
    ReviewLog.objects.bulk_create(
        log_entry(who, card) for who in (learner, other_learner) for card in cards[:2]
    )
    _move_pairs_up()
    assert stored_cards() == recount_cards(stored_pairs())
    assert set(stored_cards()) == {(cards[0].pk, 2), (cards[1].pk, 2)}


def _drop_trigger(table: str, source: str, event: str) -> None:
    on = f" ON {source}" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TRIGGER {table}_{event}{on}")


@pytest.mark.parametrize(
    ("table", "source"),
    [
        ("cards_learnercardfigures", "cards_reviewlog"),
        ("cards_cardfigures", "cards_learnercardfigures"),
    ],
)
@pytest.mark.parametrize("event", ["insert", "update", "delete"])
def test_without_a_trigger_the_recount_tells(learner, other_learner, deck, table, source, event):
    card = deck.cards.first()
    logs = ReviewLog.objects.bulk_create([log_entry(learner, card), log_entry(learner, card)])
    assert_exact()
    _drop_trigger(table, source, event)  # rolled back with the test's transaction
    if source == _PAIRS and event == "update":
        # SQLite's own triggers rewrite a pair as a delete and an insert: update it directly.
        _move_pairs_up()
        with pytest.raises(AssertionError):
            assert stored_cards() == recount_cards(stored_pairs())
        return
    if event == "insert":
        ReviewLog.objects.bulk_create([log_entry(other_learner, card)])
    elif event == "update":
        ReviewLog.objects.filter(pk=logs[0].pk).update(result="pass")
    else:
        ReviewLog.objects.filter(pk__in=[log.pk for log in logs]).delete()
    with pytest.raises(AssertionError):
        assert_exact()


# --- The admin's CSV ------------------------------------------------------------------------


def test_the_csv_is_the_pages_table_for_staff_only(learner, other_learner, deck, staff, api):
    cards = list(deck.cards.order_by("id"))
    danger = Card.objects.create(deck=deck, kind="recall", prompt="=HYPERLINK(1)", position=9)
    ReviewLog.objects.bulk_create(
        [
            log_entry(learner, cards[0], "fail"),
            log_entry(learner, cards[0], "pass"),
            log_entry(other_learner, cards[0], "pass"),
            log_entry(other_learner, danger, "pass"),
        ]
    )
    client = staff_client(staff)
    rows = csv_rows(client, "?o=-reviews&kind=recall")
    assert [r["card"] for r in rows][:2] == [str(cards[0].pk), str(danger.pk)]
    assert all(r["kind"] == "recall" for r in rows) and len(rows) == 4
    first = rows[0]
    assert (first["learners"], first["reviews"], first["lapses"]) == ("2", "3", "1")
    assert (first["first_pass_rate"], first["later_pass_rate"]) == ("0.5000", "1.0000")
    # A prompt a spreadsheet would run as a formula is written as text.
    assert rows[1]["prompt"] == "'=HYPERLINK(1)"
    assert rows[2]["first_pass_rate"] == ""
    # The page links the CSV of what it shows; unknown filters fall back as on the page.
    page = client.get("/admin/cards/cardanalysis/?o=-reviews&kind=recall").content.decode()
    assert "/admin/cards/cardanalysis/csv/?kind=recall&amp;o=-reviews" in page
    assert len(csv_rows(client, "?o=bogus&kind=nope")) == 5
    # Learners and anonymous visitors get the log-in page, not the figures.
    learner_client = Client()
    learner_client.force_login(learner)
    assert learner_client.get("/admin/cards/cardanalysis/csv/").status_code == 302
    assert Client().get("/admin/cards/cardanalysis/csv/").status_code == 302
    assert api.get("/admin/cards/cardanalysis/csv/").status_code == 302


# --- PostgreSQL: concurrent writers and TRUNCATE --------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_reviews_leave_the_figures_exact(make_user):
    users = [make_user(f"busy{i}") for i in range(3)]
    deck = Deck.objects.create(slug="busy", title="Busy")
    cards = [Card.objects.create(deck=deck, kind="recall", prompt=f"Q{i}") for i in range(4)]
    with time_machine.travel(START, tick=False):
        for user in users:
            services.enroll(learner=user, deck=deck, at=START)
    tokens = [Token.objects.get_or_create(user=user)[0].key for user in users]

    # Learners reviewing the same cards at once share the cards' rows.
    with time_machine.travel(DAY1, tick=True):
        jobs = [(t, c, "fail" if i % 2 else "pass") for i, t in enumerate(tokens) for c in cards]
        statuses = in_threads(jobs, post_review)
    assert statuses == [201] * 12
    assert len(assert_exact()) == 12

    # Multi-row statements over the same cards in opposite orders queue, not deadlock.
    def load(order):
        pairs = [(user, card) for user in users for card in cards][::order]
        return len(ReviewLog.objects.bulk_create(log_entry(u, c) for u, c in pairs * 2))

    assert in_threads([(1,), (-1,), (1,), (-1,)], load) == [24] * 4
    assert {v[0] for v in assert_exact().values()} == {9}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_truncating_the_log_empties_the_figures(learner, deck):
    ReviewLog.objects.bulk_create([log_entry(learner, deck.cards.first())])
    assert CardFigures.objects.exists()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE cards_reviewlog, cards_exercisebinding, cards_labbinding")
    assert not LearnerCardFigures.objects.exists() and not CardFigures.objects.exists()


# --- The migration's backfill ---------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_migration_backfills_the_figures_and_is_reversible(learner, other_learner, deck):
    from django.db.migrations.executor import MigrationExecutor

    from .old_chain import migrate_to_latest

    cards = list(deck.cards.order_by("id"))
    logs = ReviewLog.objects.bulk_create(
        log_entry(who, card, "pass" if card.pk % 2 else "fail")
        for who in (learner, other_learner)
        for card in cards
    )
    executor = MigrationExecutor(connection)
    executor.migrate([("cards", "0012_card_interview_points_answer_text")])
    try:
        # Without the triggers, writes go uncounted until the migration backfills them.
        ReviewLog.objects.bulk_create(
            [log_entry(learner, cards[0], "pass"), log_entry(learner, cards[1], undo_of=logs[1])]
        )
        ReviewLog.objects.filter(pk=logs[2].pk).update(result="pass")
        expected = recount_pairs()
        assert len(expected) == 7
    finally:
        migrate_to_latest(connection)
    assert stored_pairs() == expected
    assert stored_cards() == recount_cards(expected)
    # The triggers are back: a write is counted.
    ReviewLog.objects.bulk_create([log_entry(other_learner, cards[3])])
    assert_exact()


# --- The exercise kinds: the attempts' verdicts counted per kind ---------------------------


def recount_kinds() -> dict[tuple[str, str, str, str], int]:
    """Per (kind, section, item, cell): the attempts' verdicts counted in Python."""
    counts: dict[tuple[str, str, str, str], int] = defaultdict(int)
    for kind, correct, result in Attempt.objects.values_list("exercise__kind", "correct", "result"):
        counts[(kind, "attempts", "", "")] += 1
        if correct:
            counts[(kind, "correct", "", "")] += 1
        diagnosis = result.get("diagnosis") if isinstance(result, dict) else None
        for entry in diagnosis if isinstance(diagnosis, list) else []:
            code = entry.get("code") if isinstance(entry, dict) else None
            counts[(kind, "mistake", str(code) if code is not None else "", "")] += 1
        parts = result.get("parts") if isinstance(result, dict) else None
        for name, part in (parts if isinstance(parts, dict) else {}).items():
            if not isinstance(part, dict):
                continue
            if part.get("correct") is False:
                counts[(kind, "part", name, "")] += 1
            cells = part.get("wrong_cells")
            for cell in cells if isinstance(cells, list) else []:
                counts[(kind, "cell", name, json.dumps(cell))] += 1
    return dict(counts)


def stored_kinds() -> dict[tuple[str, str, str, str], int]:
    rows = ExerciseKindFigures.objects.values_list("kind", "section", "item", "cell", "n")
    stored = {}
    for kind, section, item, cell, n in rows:
        # Each database writes JSON its own way ("[0, 1]" or "[0,1]"): compare the values.
        key = (kind, section, item, json.dumps(json.loads(cell)) if cell else "")
        assert key not in stored
        stored[key] = n
    return stored


def assert_kinds_exact() -> dict[tuple[str, str, str, str], int]:
    counts = recount_kinds()
    assert stored_kinds() == counts
    return counts


def attempt(exercise, result, number=1, correct=False) -> Attempt:
    return Attempt(
        exercise=exercise,
        number=number,
        answers={},
        correct=correct,
        score=0.0,
        result=result,
    )


def test_attempts_through_the_api_keep_the_kind_figures_exact(api, learner):
    created = api.post(
        "/api/v1/exercises/", {"kind": "attention", "params": {"seed": 5}}, format="json"
    )
    assert created.status_code == 201, created.content
    exercise = Exercise.objects.get(pk=created.json()["id"])
    kind = get_kind("attention")
    code = next(c for c in kind.mistakes if "scale" in c)
    variant = kind.answers_under(exercise.inputs, MISTAKES[code].recipe)
    answers = {a["name"]: exercise.solution[a["name"]] for a in exercise.asks}
    unscaled = {**answers, **{k: v.tolist() for k, v in variant.items() if k in answers}}
    url = f"/api/v1/exercises/{exercise.pk}/submit/"
    assert api.post(url, {"answers": unscaled}, format="json").status_code == 200
    counts = assert_kinds_exact()
    assert counts[("attention", "attempts", "", "")] == 1
    assert counts[("attention", "mistake", code, "")] == 1
    assert any(key[1] == "cell" for key in counts)
    assert api.post(url, {"answers": answers}, format="json").status_code == 200
    assert assert_kinds_exact()[("attention", "correct", "", "")] == 1
    (page,) = item_analysis.exercise_kind_analysis()
    assert page["attempts"] == 2 and page["correct_rate"] == 0.5
    assert any(m["code"] == code and m["count"] == 1 for m in page["mistakes"])

    # Deleting the account deletes its exercises and attempts, and their counts.
    response = api.delete("/api/v1/me/", {"password": PASSWORD}, format="json")
    assert response.status_code == 204, response.content
    assert assert_kinds_exact() == {} and not ExerciseKindFigures.objects.exists()


def test_verdicts_of_any_shape_are_counted_and_never_fail_the_write(learner):
    exercise = exercise_create(owner=learner, kind="attention", params={"seed": 1})
    odd = [
        {"parts": {"w": {"correct": False, "wrong_cells": [[0, 1], [0, 1], 3]}}},
        {"parts": {"w": "text", "o": 5, "x": {"correct": True, "wrong_cells": "none"}}},
        {"parts": ["w"], "diagnosis": ["text", {"code": 7}, {"no": "code"}, {"code": "c"}]},
        {"diagnosis": {"code": "c"}},
        {},
        [],
    ]
    Attempt.objects.bulk_create(attempt(exercise, r, i) for i, r in enumerate(odd, 1))
    counts = assert_kinds_exact()
    assert counts[("attention", "cell", "w", "[0, 1]")] == 2
    assert counts[("attention", "mistake", "", "")] == 2
    # An UPDATE of a verdict, and deletes, are counted too.
    first = Attempt.objects.order_by("id").first()
    Attempt.objects.filter(pk=first.pk).update(
        result={"parts": {"w": {"correct": False, "wrong_cells": [[1, 1]]}}}, correct=True
    )
    assert_kinds_exact()
    Attempt.objects.filter(pk__in=Attempt.objects.order_by("id").values("pk")[:3]).delete()
    assert_kinds_exact()
    # A statement of more than 64 attempts is planned afresh: counted the same.
    many = [odd[0], odd[2]] * 40
    Attempt.objects.bulk_create(attempt(exercise, r, 10 + i) for i, r in enumerate(many))
    assert assert_kinds_exact()[("attention", "attempts", "", "")] == 83
    Attempt.objects.all().delete()
    assert not ExerciseKindFigures.objects.exists()


@pytest.mark.parametrize("event", ["insert", "update", "delete"])
def test_without_a_kind_trigger_the_recount_tells(learner, event):
    exercise = exercise_create(owner=learner, kind="attention", params={"seed": 2})
    verdict = {"parts": {"w": {"correct": False, "wrong_cells": [[0, 0]]}}}
    (first,) = Attempt.objects.bulk_create([attempt(exercise, verdict)])
    assert_kinds_exact()
    _drop_trigger("cards_exercisekindfigures", "exercises_attempt", event)
    if event == "insert":
        Attempt.objects.bulk_create([attempt(exercise, verdict, 2)])
    elif event == "update":
        Attempt.objects.filter(pk=first.pk).update(result={})
    else:
        Attempt.objects.filter(pk=first.pk).delete()
    with pytest.raises(AssertionError):
        assert_kinds_exact()
