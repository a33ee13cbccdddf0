"""The due queue and review submission stay within 5 SQL queries, whatever the data size."""

from __future__ import annotations

import datetime as dt

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cards import services
from cards.due import due_page, due_reviews
from cards.lapses import leech_card_ids
from cards.models import (
    Card,
    Deck,
    ExerciseBinding,
    LearnerProfile,
    ReviewLog,
    ReviewState,
    Tag,
)
from cards.renderers import due_items
from cards.serializers import CardSerializer, DueItemSerializer
from cards.services.due_exercises import exercises_bind_ahead
from exercises.models import Exercise

pytestmark = pytest.mark.django_db
# Query counts are taken outside a test transaction, as in production, where an atomic
# block costs BEGIN and COMMIT rather than savepoints.
counted = pytest.mark.django_db(transaction=True)

DUE = "/api/v1/reviews/due/"
START = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)
LATER = START + dt.timedelta(days=2)
# PostgreSQL, the production database, moves a state, appends its log and counts its day
# in one statement (a data-modifying CTE). SQLite has no data-modifying CTEs, so there the
# same work takes separate statements: its budget is looser, and just as flat.
# One more for the page's retrievability (its log and the learner's FSRS parameters, in
# one UNION).
MAX_QUERIES = 6 if connection.vendor == "postgresql" else 10


def make_deck(slug: str, *, recall: int, exercise: int = 0) -> Deck:
    deck = Deck.objects.create(slug=slug, title=slug.title())
    tags = [Tag.objects.get_or_create(name=name)[0] for name in ("heads", "masks")]
    cards = Card.objects.bulk_create(
        [
            Card(deck=deck, kind="recall", prompt=f"P{i}", answer=f"A{i}", position=i)
            for i in range(recall)
        ]
        + [
            Card(
                deck=deck,
                kind="exercise",
                prompt=f"E{i}",
                exercise={"kind": "attention", "params": {"n": 2}},
                position=recall + i,
            )
            for i in range(exercise)
        ]
    )
    for card in cards[:3]:
        card.tags.set(tags)
    return deck


def enrol(learner, *decks):
    """Enrol with a pace that places every card at once (these tests measure the queue)."""
    LearnerProfile.objects.filter(user=learner).update(new_cards_per_day=1000)
    learner.refresh_from_db()
    with time_machine.travel(START, tick=False):
        for deck in decks:
            services.enroll(learner=learner, deck=deck, at=timezone.now())


def due(api, query: str = ""):
    r = api.get(DUE + query)
    assert r.status_code == 200, r.content
    return r.json()


def count_queries(fn) -> int:
    with CaptureQueriesContext(connection) as ctx:
        fn()
    return len(ctx.captured_queries)


@counted
@pytest.mark.parametrize(("recall", "exercise"), [(3, 0), (150, 0), (3, 2), (30, 25)])
def test_due_page_takes_at_most_five_queries_first_and_later_requests(
    api, learner, recall, exercise, django_assert_max_num_queries
):
    enrol(learner, make_deck("d", recall=recall, exercise=exercise))
    with time_machine.travel(LATER, tick=False):
        exercises_bind_ahead(at=timezone.now())  # the beat, as the day begins
        with django_assert_max_num_queries(MAX_QUERIES):  # first request of the day
            first = due(api, "?page_size=100")
        with django_assert_max_num_queries(MAX_QUERIES):
            again = due(api, "?page_size=100")
    assert first["count"] == recall + exercise
    bound = [i["exercise"]["id"] for i in first["results"] if i["card"]["kind"] == "exercise"]
    on_page = min(recall + exercise, 100) - min(recall, 100)
    assert len(set(bound)) == on_page
    assert bound == [i["exercise"]["id"] for i in again["results"] if "exercise" in i]


@counted
def test_query_count_is_flat_in_page_size_deck_size_and_exercise_cards(api, learner):
    enrol(learner, make_deck("small", recall=4, exercise=1))
    with time_machine.travel(LATER, tick=False):
        small_first = count_queries(lambda: due(api, "?page_size=20"))
        small_later = count_queries(lambda: due(api, "?page_size=20"))
    ExerciseBinding.objects.all().delete()
    enrol(learner, make_deck("big", recall=200, exercise=40))
    with time_machine.travel(LATER, tick=False):
        big_first = count_queries(lambda: due(api, "?page_size=100"))
        big_later = count_queries(lambda: due(api, "?page_size=100"))
        last_first = count_queries(lambda: due(api, "?page_size=100&page=3"))
        last_later = count_queries(lambda: due(api, "?page_size=100&page=3"))
    assert small_first == big_first == last_first <= MAX_QUERIES
    assert small_later == big_later == last_later <= MAX_QUERIES


def test_the_beat_binds_every_exercise_card_set_based_and_the_page_reads_them(
    api, learner, django_assert_max_num_queries
):
    enrol(learner, make_deck("d", recall=0, exercise=12))
    with time_machine.travel(LATER, tick=False):
        # The chunks' bounds, then per day (today, then tomorrow) the chunk's learners, the
        # states that lack a binding and the bindings' insert (on SQLite two, in a
        # transaction), whatever the number of cards.
        with django_assert_max_num_queries(7 if connection.vendor == "postgresql" else 13):
            assert exercises_bind_ahead(at=timezone.now()) == 24
        body = due(api, "?page_size=100")
    ids = {item["exercise"]["id"] for item in body["results"]}
    assert len(ids) == 12
    bindings = ExerciseBinding.objects.filter(learner=learner, study_day=body["today"])
    assert set(bindings.values_list("exercise_id", flat=True)) == ids
    # 12 bound by the enrolment for the day after it, 24 by the beat for today and tomorrow.
    assert Exercise.objects.filter(owner=learner).count() == 36
    with time_machine.travel(LATER, tick=False):
        assert exercises_bind_ahead(at=timezone.now()) == 0  # run again: nothing to bind


def test_a_spent_practice_exercise_is_replaced_by_a_fresh_one(api, learner):
    enrol(learner, make_deck("d", recall=0, exercise=1))
    with time_machine.travel(LATER, tick=False):
        exercises_bind_ahead(at=timezone.now())
        first = due(api)["results"][0]["exercise"]["id"]
        Exercise.objects.filter(pk=first).update(attempts_used=1)  # answered as practice
        assert due(api)["results"][0]["exercise"] is None  # the page only reads
        exercises_bind_ahead(at=timezone.now())  # the beat replaces it
        second = due(api)["results"][0]["exercise"]["id"]
    assert second != first
    today = LATER.date()
    assert ExerciseBinding.objects.get(learner=learner, study_day=today).exercise_id == second


def test_a_binding_made_by_a_concurrent_request_wins(learner):
    deck = make_deck("d", recall=0, exercise=1)
    enrol(learner, deck)
    card = deck.cards.get()
    today = dt.date(2026, 3, 4)
    winner = Exercise.objects.create(
        owner=learner, kind="attention", params={}, seed=1, inputs={}, asks=[], solution={}
    )
    ExerciseBinding.objects.create(exercise=winner, learner=learner, card=card, study_day=today)
    # The page was read before the concurrent binding existed.
    item = services.DueExercise(card_id=card.pk, spec=card.exercise)
    bound = services.due_exercises_bind(learner=learner, items=[item], today=today)
    assert bound[card.pk].pk == winner.pk


def test_due_card_objects_equal_the_card_serializer(api, learner):
    deck = make_deck("d", recall=3, exercise=1)
    enrol(learner, deck)
    with time_machine.travel(LATER, tick=False):
        body = due(api)
    by_id = {item["card"]["id"]: item["card"] for item in body["results"]}
    expected = CardSerializer(Card.objects.filter(deck=deck), many=True).data
    assert len(by_id) == 4
    for card in expected:
        assert by_id[card["id"]] == dict(card)
    assert by_id[expected[0]["id"]]["tags"] == ["heads", "masks"]


def test_the_fast_renderer_equals_the_due_item_serializer(learner, settings):
    """``renderers.due_items`` against ``DueItemSerializer`` over the ORM's due states."""
    settings.STUDY_LEECH_LAPSES = 1
    deck = make_deck("d", recall=3, exercise=1)
    enrol(learner, deck)
    first = deck.cards.order_by("id").first()
    assert first is not None
    services.review_record(learner=learner, card=first, result="fail", at=LATER)
    today = LATER.date() + dt.timedelta(days=1)
    rows = due_page(learner=learner, today=today, offset=0, limit=100)
    exercises = {row["card_id"]: {"id": row["card_id"]} for row in rows}
    rendered = due_items(rows, exercises=exercises)
    states = list(due_reviews(learner=learner, today=today))
    expected = DueItemSerializer(
        [
            {
                "card": state.card,
                "step": state.step,
                "interval_days": settings.STUDY_LADDER_DAYS[state.step],
                "due_on": state.due_on,
                "leech": state.card_id in leech_card_ids(learner=learner),
                **(
                    {"exercise": exercises[state.card_id]}
                    if state.card.kind == Card.Kind.EXERCISE
                    else {}
                ),
            }
            for state in states
        ],
        many=True,
    ).data
    assert len(rendered) == 4 and {item["leech"] for item in rendered} == {True, False}
    assert sum("exercise" in item for item in rendered) == 1
    # Only an exercise card's item carries "exercise" (the serializer would give null).
    assert [
        {k: v for k, v in item.items() if k != "exercise" or item["card"]["kind"] == "exercise"}
        for item in expected
    ] == [{**item, "due_on": item["due_on"].isoformat()} for item in rendered]


def test_pages_links_and_a_page_past_the_end(api, learner):
    enrol(learner, make_deck("d", recall=5))
    with time_machine.travel(LATER, tick=False):
        one = due(api, "?page_size=2")
        two = api.get(one["next"]).json()
        three = api.get(two["next"]).json()
        past = api.get(DUE + "?page_size=2&page=4")
    assert one["previous"] is None and "page=2" in one["next"]
    assert "page=" not in two["previous"] and "page=3" in two["next"]
    assert three["next"] is None and len(three["results"]) == 1
    ids = [i["card"]["id"] for page in (one, two, three) for i in page["results"]]
    assert len(set(ids)) == 5
    assert past.status_code == 404


def test_an_empty_queue_is_page_one_and_404_after(api, learner):
    assert due(api)["count"] == 0
    assert api.get(DUE + "?page=2").status_code == 404


@counted
def test_submission_with_idempotency_key_takes_at_most_five_queries(
    api, learner, django_assert_max_num_queries
):
    deck = make_deck("d", recall=3)
    enrol(learner, deck)
    card = deck.cards.first()
    with time_machine.travel(LATER, tick=False):
        with django_assert_max_num_queries(MAX_QUERIES):
            r = api.post(
                "/api/v1/reviews/",
                {"card": card.pk, "result": "pass"},
                format="json",
                HTTP_IDEMPOTENCY_KEY="k-1",
            )
        assert r.status_code == 201, r.content
        with django_assert_max_num_queries(MAX_QUERIES):
            replay = api.post(
                "/api/v1/reviews/",
                {"card": card.pk, "result": "pass"},
                format="json",
                HTTP_IDEMPOTENCY_KEY="k-1",
            )
        with django_assert_max_num_queries(MAX_QUERIES):
            plain = api.post(
                "/api/v1/reviews/",
                {"card": deck.cards.last().pk, "result": "fail"},
                format="json",
            )
    assert replay.status_code == 201 and replay.json() == r.json()
    assert plain.status_code == 201
    state = ReviewState.objects.get(learner=learner, card=card)
    assert (state.step, state.due_on) == (1, dt.date(2026, 3, 4) + dt.timedelta(days=3))
    assert state.last_reviewed_at == LATER


def test_the_selector_page_matches_the_queryset_order(learner):
    deck = make_deck("d", recall=7)
    enrol(learner, deck)
    today = dt.date(2026, 3, 10)
    ReviewState.objects.filter(card__position__in=[2, 5]).update(due_on=dt.date(2026, 3, 1))
    rows = due_page(learner=learner, today=today, offset=0, limit=100)
    expected = list(due_reviews(learner=learner, today=today).values_list("card_id", flat=True))
    assert [row["card_id"] for row in rows] == expected
    tail = due_page(learner=learner, today=today, offset=5, limit=100)
    assert [row["card_id"] for row in tail] == expected[5:]


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_pages_read_from_the_end_match_pages_read_from_the_start(learner, size):
    deck = make_deck("d", recall=11)
    enrol(learner, deck)
    today = dt.date(2026, 3, 10)
    ReviewState.objects.filter(card__position__in=[3, 7, 8]).update(due_on=dt.date(2026, 3, 1))
    expected = list(due_reviews(learner=learner, today=today).values_list("card_id", flat=True))
    pages = []
    for offset in range(0, 11, size):
        rows = due_page(learner=learner, today=today, offset=offset, limit=size, count=11)
        assert len(rows) == min(size, 11 - offset)
        pages.extend(row["card_id"] for row in rows)
    assert pages == expected


def fail_logs(learner, card, n: int) -> list[ReviewLog]:
    day = dt.date(2026, 3, 1)
    return ReviewLog.objects.bulk_create(
        ReviewLog(
            learner=learner,
            card=card,
            reviewed_at=START,
            study_day=day,
            result="fail",
            step_before=0,
            step_after=0,
            interval_days=1,
            due_before=day,
            due_after=day,
        )
        for _ in range(n)
    )


@counted
def test_leech_flags_ride_in_the_page_query(api, learner, settings):
    settings.STUDY_LEECH_LAPSES = 2
    deck = make_deck("d", recall=30)
    enrol(learner, deck)
    with time_machine.travel(LATER, tick=False):
        due(api, "?page_size=100")
        without = count_queries(lambda: due(api, "?page_size=100"))
    cards = list(deck.cards.order_by("position"))
    fail_logs(learner, cards[0], 2)
    fail_logs(learner, cards[1], 1)
    undone = fail_logs(learner, cards[2], 3)[0]
    ReviewLog.objects.bulk_create(  # undoing one of three fails leaves two: still a leech
        [
            ReviewLog(
                **{
                    f.attname: getattr(undone, f.attname)
                    for f in ReviewLog._meta.concrete_fields
                    if f.attname != "id"
                },
            )
        ]
    )
    ReviewLog.objects.filter(pk=ReviewLog.objects.latest("id").pk).update(undo_of=undone)
    fail_logs(learner, cards[3], 2)
    fail_logs(learner.__class__.objects.create(username="other"), cards[4], 5)
    with time_machine.travel(LATER, tick=False), CaptureQueriesContext(connection) as ctx:
        body = due(api, "?page_size=100")
    leech = {item["card"]["id"] for item in body["results"] if item["leech"]}
    assert leech == {cards[0].id, cards[2].id, cards[3].id}
    assert len(ctx.captured_queries) == without <= MAX_QUERIES
    # Past the half of the queue the page is read from the end: same flags there.
    with time_machine.travel(LATER, tick=False):
        tail = due(api, "?page_size=10&page=3")
    assert not any(item["leech"] for item in tail["results"])
    with time_machine.travel(LATER, tick=False):
        head = due(api, "?page_size=2&page=1")
    assert [item["leech"] for item in head["results"]] == [True, False]
