"""The kept review and the leech: each rule's other forms say what its definition says.

* A kept review: ``ReviewLog.objects.kept()`` is the definition; its SQL form
  (``cards.db.counts.kept``), the benchmarks' floor's read of the log and the lapse
  counts the triggers keep are held to it, over random histories of reviews and undos.
* A leech: ``cards.lapses.is_leech`` is the definition; its ORM form (``leech_q``, read
  by ``leech_card_ids``), its SQL form (``leech_sql``, in the item analysis), the due
  page's flag and the benchmarks' floor's are held to it, at several thresholds.
"""

from __future__ import annotations

import datetime as dt

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count
from django.test import override_settings
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token

from benchmarks import floor
from cards import due
from cards.db.counts import kept
from cards.item_analysis import card_analysis
from cards.lapses import is_leech, leech_card_ids
from cards.models import Card, Deck, Enrollment, LapseCount, ReviewLog, ReviewState
from tests.studyapp.test_bench_floor import call, floor_on_test_database  # noqa: F401 - fixture

from .test_rule_forms import EXAMPLES, rolled_back

pytestmark = pytest.mark.django_db

CARDS = 4
TODAY = dt.date(2026, 3, 4)


@pytest.fixture
def deck(db):
    deck = Deck.objects.create(slug="heads", title="Heads")
    for i in range(CARDS):
        Card.objects.create(deck=deck, kind="recall", prompt=f"P{i}", answer=f"A{i}", position=i)
    return deck


def log_entry(learner, card, at: dt.datetime, *, result: str, undo_of=None) -> ReviewLog:
    return ReviewLog.objects.create(
        learner=learner,
        card=card,
        reviewed_at=at,
        study_day=at.date(),
        result=result,
        step_before=0,
        step_after=0,
        interval_days=1,
        due_before=at.date(),
        due_after=at.date(),
        undo_of=undo_of,
    )


# What happens to one learner's card, in order: a review passed or failed, or the undo of
# one of the card's kept reviews (picked by index; nothing when none is kept).
EVENT = st.one_of(
    st.tuples(st.sampled_from(["pass", "fail"]), st.just(0)),
    st.tuples(st.just("undo"), st.integers(0, 20)),
)
HISTORY = st.lists(
    st.lists(st.lists(EVENT, max_size=9), min_size=CARDS, max_size=CARDS),
    min_size=1,
    max_size=3,
)


def write_history(history: list[list[list[tuple[str, int]]]], cards: list[Card]):
    """The log of ``history`` (per learner, per card, its events), each learner's states due
    today; the learners, and per (learner, card) the failed reviews that stayed kept."""
    learners, fails = [], {}
    moment = dt.datetime(2026, 3, 4, 12, tzinfo=dt.UTC)
    for n, per_card in enumerate(history):
        learner = get_user_model().objects.create(username=f"learner{n}")
        learners.append(learner)
        Enrollment.objects.create(learner=learner, deck=cards[0].deck)
        for card, events in zip(cards, per_card, strict=True):
            ReviewState.objects.create(learner=learner, card=card, step=0, due_on=TODAY)
            standing: list[ReviewLog] = []
            for what, pick in events:
                moment += dt.timedelta(seconds=1)
                if what == "undo" and not standing:
                    continue
                undone = standing.pop(pick % len(standing)) if what == "undo" else None
                entry = log_entry(
                    learner,
                    card,
                    moment,
                    result=undone.result if undone else what,
                    undo_of=undone,
                )
                if undone is None:
                    standing.append(entry)
            fails[learner.pk, card.pk] = sum(1 for e in standing if e.result == "fail")
    return learners, fails


@EXAMPLES
@given(history=HISTORY)
def test_the_kept_reviews_in_sql_are_the_kept_reviews_of_the_orm(deck, history):
    cards = list(deck.cards.order_by("position"))
    with rolled_back():
        _, fails = write_history(history, cards)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT l.id FROM cards_reviewlog l WHERE {kept('l')}")
            in_sql = {row[0] for row in cursor.fetchall()}
        assert in_sql == set(ReviewLog.objects.kept().values_list("id", flat=True))
        kept_fails = (
            ReviewLog.objects.kept()
            .filter(result="fail")
            .values_list("learner_id", "card_id")
            .annotate(n=Count("id"))
        )
        expected = {pair: n for pair, n in fails.items() if n}
        assert {(a, b): n for a, b, n in kept_fails} == expected
        assert set(LapseCount.objects.values_list("learner_id", "card_id", "n")) == {
            (*pair, n) for pair, n in expected.items()
        }


@EXAMPLES
@given(history=HISTORY, threshold=st.integers(1, 4))
def test_every_form_of_a_leech_is_is_leech(deck, history, threshold):
    cards = list(deck.cards.order_by("position"))
    with rolled_back(), override_settings(STUDY_LEECH_LAPSES=threshold):
        learners, fails = write_history(history, cards)
        for learner in learners:
            leeches = {card.pk for card in cards if is_leech(fails[learner.pk, card.pk])}
            assert leech_card_ids(learner=learner) == leeches
            page = due.due_page(learner=learner, today=TODAY, offset=0, limit=100)
            assert {row["card_id"] for row in page if row["leech"]} == leeches
        rows, _ = card_analysis(deck=deck.slug, limit=None)
        assert {row.card: row.leeches for row in rows} == {
            card.pk: sum(1 for u in learners if is_leech(fails[u.pk, card.pk])) for card in cards
        }


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_floors_leech_and_kept_log_are_the_rules(
    api,
    learner,
    settings,
    monkeypatch,
    deck,
    floor_on_test_database,  # noqa: F811 - the fixture
):
    settings.STUDY_LEECH_LAPSES = 2
    # Retrievability is the floor's own comparison (tests/studyapp/test_bench_floor.py).
    monkeypatch.setattr(floor, "_retrievability", lambda *args: {})
    cards = list(deck.cards.order_by("position"))
    Enrollment.objects.create(learner=learner, deck=deck)
    start = dt.datetime(2026, 3, 2, 12, tzinfo=dt.UTC)
    for i, card in enumerate(cards):
        ReviewState.objects.create(learner=learner, card=card, step=0, due_on=start.date())
        # Card i fails i times, and once more with that fail undone (no lapse).
        for n in range(i):
            log_entry(learner, card, start + dt.timedelta(days=n), result="fail")
        undone = log_entry(learner, card, start + dt.timedelta(days=4), result="fail")
        at = start + dt.timedelta(days=4, minutes=1)
        log_entry(learner, card, at, result="fail", undo_of=undone)
    token = Token.objects.get(user=learner).key
    with time_machine.travel(start + dt.timedelta(days=6), tick=False):
        ours = api.get("/api/v1/reviews/due/").json()["results"]
        status, bare = call("GET", "/bench/floor/due/", token)
    assert status == "200 OK"
    flags = {item["card"]["id"]: item["leech"] for item in bare["results"]}
    assert flags == {item["card"]["id"]: item["leech"] for item in ours}
    assert flags == {card.pk: is_leech(i) for i, card in enumerate(cards)}
    assert {card for card, leech in flags.items() if leech} == {cards[2].pk, cards[3].pk}
    # The floor reads the kept log with the rule's SQL form: the ORM's kept reviews.
    rows = floor._connection().execute(
        floor.RECALL_SQL, {"learner": learner.pk, "cards": [card.pk for card in cards]}
    )
    assert {row[4] for row in rows if row[0] is not None} == set(
        ReviewLog.objects.kept().values_list("id", flat=True)
    )
