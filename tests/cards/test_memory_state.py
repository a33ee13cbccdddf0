"""The FSRS memory each review state keeps is the replay of its kept log.

A recorded review stores its card's memory with the move of its state, a new fit stores
every state's again, and an undo leaves the memory not current (read as a replay) until
the card's memory is stored again (``memory_state_refresh``, what an undo calls). Over
random histories of passes, fails, late reviews, undos and a fit, the kept memory and the
due page's retrievability equal a replay of the log with the learner's parameters in
force; the migration that added the memory fills it with the same.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import pytest
from django.db import connection
from hypothesis import given
from hypothesis import strategies as st

from cards import memory, services
from cards.models import Card, Deck, LearnerProfile, MemoryParameters, ReviewLog, ReviewState
from cards.services.memory import (
    current_parameters,
    last_states,
    learner_log,
    memory_state_refresh,
    memory_states_rebuild,
    page_retrievability,
    retrievability_of,
)

from .test_rule_forms import EXAMPLES, rolled_back

pytestmark = pytest.mark.django_db

CARDS = 3
START = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def deck(db) -> Deck:
    deck = Deck.objects.create(slug="heads", title="Heads")
    for i in range(CARDS):
        Card.objects.create(deck=deck, kind="recall", prompt=f"P{i}", answer=f"A{i}", position=i)
    return deck


def enrol(learner, deck) -> list[Card]:
    LearnerProfile.objects.filter(user=learner).update(new_cards_per_day=1000)
    learner.refresh_from_db()
    services.enroll(learner=learner, deck=deck, at=START)
    return list(deck.cards.order_by("position"))


def replayed(learner) -> tuple[dict[int, tuple[float, float, dt.date]], list[float]]:
    """Each card's memory after a replay of the learner's kept log, and the parameters."""
    w = current_parameters(MemoryParameters.objects.filter(learner=learner).first())
    log = learner_log(learner_id=learner.pk)
    played = memory.replay(cards=log.cards, days=log.days, passed=log.passed, w=w)
    last = last_states(log.cards, log.days, played)
    return {card: (s, d, dt.date.fromordinal(day)) for card, (s, d, day) in last.items()}, w


def assert_kept_is_replayed(learner, today: dt.date, *, current: set[int] = frozenset()) -> None:
    """Every state whose memory is current holds the replay's; those in ``current`` must
    be current; and the due page's retrievability is the replay's for every card."""
    expected, w = replayed(learner)
    for state in ReviewState.objects.filter(learner=learner):
        is_current = state.memory_as_of == state.last_reviewed_at
        if state.card_id in current:
            assert is_current, state.card_id
        if not is_current:
            continue
        kept = expected.get(state.card_id)
        if kept is None:
            assert (state.stability, state.difficulty, state.last_review_day) == (None,) * 3
        else:
            assert state.stability == pytest.approx(kept[0], rel=1e-9)
            assert state.difficulty == pytest.approx(kept[1], rel=1e-9)
            assert state.last_review_day == kept[2]
    card_ids = list(ReviewState.objects.filter(learner=learner).values_list("card_id", flat=True))
    log = learner_log(learner_id=learner.pk)
    assert page_retrievability(learner=learner, card_ids=card_ids, today=today) == (
        pytest.approx(retrievability_of(log=log, w=w, today=today), abs=1e-4)
    )


@dataclass(frozen=True)
class Step:
    """One move of a history: ``days`` later (0: the same study day), a review of
    ``card`` (pass or fail) or a new fit; or, on the same study day, an undo of the
    latest review."""

    days: int
    card: int
    action: str  # "pass", "fail", "undo" or "fit"


STEPS = st.lists(
    st.builds(
        Step,
        days=st.sampled_from([0, 0, 1, 2, 3, 7, 16, 40]),
        card=st.integers(0, CARDS - 1),
        action=st.sampled_from(["pass", "pass", "fail", "fail", "undo", "undo", "fit"]),
    ),
    min_size=1,
    max_size=12,
)
# A fit's parameters: the defaults with the first stabilities and the decay moved.
FITS = st.tuples(st.floats(0.5, 8.0), st.floats(1.0, 20.0), st.floats(0.1, 0.6))


@EXAMPLES
@given(steps=STEPS, fit=FITS, refresh=st.booleans())
def test_the_kept_memory_is_the_replay_of_the_log(learner, deck, steps, fit, refresh):
    with rolled_back():
        cards = enrol(learner, deck)
        at = START
        latest: ReviewLog | None = None
        for step in steps:
            at += dt.timedelta(days=0 if step.action == "undo" else step.days, minutes=1)
            card = cards[step.card]
            today = at.date()
            stored: set[int] = set()
            if step.action == "fit":
                w = list(memory.DEFAULT_PARAMETERS)
                w[0], w[2], w[20] = fit
                MemoryParameters.objects.update_or_create(
                    learner=learner,
                    defaults={
                        "parameters": w,
                        "fitted": True,
                        "reviews_used": 400,
                        "fitted_at": at,
                    },
                )
                memory_states_rebuild(learner_id=learner.pk)  # as fit_learner does
                stored = {c.pk for c in cards}
            elif step.action == "undo":
                if latest is None or latest.study_day != today:
                    continue  # nothing of today's to undo
                services.review_undo(learner=learner, review_id=latest.pk, at=at)
                if refresh:  # what the undo calls once it has put the state back
                    memory_state_refresh(learner_id=learner.pk, card_id=latest.card_id)
                    stored = {latest.card_id}
                latest = None
            else:
                # Any day may review it: the ladder's due dates are not what is tested here.
                ReviewState.objects.filter(learner=learner, card=card).update(due_on=today)
                latest = services.review_record(
                    learner=learner, card=card, result=step.action, at=at
                )
                stored = {card.pk}
            assert_kept_is_replayed(learner, today, current=stored)


@EXAMPLES
@given(days=st.lists(st.integers(0, 60), min_size=1, max_size=10), passed=st.lists(st.booleans()))
def test_a_memory_kept_review_by_review_is_the_replay(days, passed):
    """The pure step: ``review_memory`` applied review by review ends where ``replay`` does."""
    w = list(memory.DEFAULT_PARAMETERS)
    passed = (passed * len(days))[: len(days)] or [True] * len(days)
    ordinals = np.cumsum(np.array(days)) + dt.date(2026, 1, 1).toordinal()
    kept, last = None, None
    for day, ok in zip(ordinals, passed, strict=True):
        kept = memory.review_memory(kept, 0 if last is None else int(day - last), ok, w)
        last = day
    played = memory.replay(
        cards=np.zeros(len(days), np.int64), days=ordinals, passed=np.array(passed), w=w
    )
    assert kept == pytest.approx((played.stability[-1], played.difficulty[-1]), rel=1e-12)


def test_a_review_stores_the_memory_with_its_move(learner, deck, django_assert_max_num_queries):
    cards = enrol(learner, deck)
    at = START + dt.timedelta(days=1)
    services.review_record(learner=learner, card=cards[0], result="fail", at=at)
    state = ReviewState.objects.get(learner=learner, card=cards[0])
    s, d = memory.first_state(memory.FAIL_RATING, memory.DEFAULT_PARAMETERS)
    assert (state.stability, state.difficulty) == pytest.approx((float(s), float(d)))
    assert state.last_review_day == at.date() and state.memory_as_of == state.last_reviewed_at
    later = at + dt.timedelta(days=1)
    # The state, the profile, the learner's fit, the one move: nothing more for the memory.
    with django_assert_max_num_queries(4 if connection.vendor == "postgresql" else 8):
        services.review_record(learner=learner, card=cards[0], result="pass", at=later)
    state.refresh_from_db()
    s2, d2 = memory.next_state(s, d, 1, memory.PASS_RATING, memory.DEFAULT_PARAMETERS)
    assert (state.stability, state.difficulty) == pytest.approx((float(s2), float(d2)))


def test_a_fit_stored_before_the_move_leaves_the_memory_not_current(learner, deck, monkeypatch):
    """A review computed under the defaults while a fit lands: the move stores no memory
    that claims to be current, and the due page replays the card instead."""
    from cards.services import memory as memory_service

    cards = enrol(learner, deck)
    at = START + dt.timedelta(days=1)
    w = list(memory.DEFAULT_PARAMETERS)
    w[2] = 20.0
    real = memory_service.learner_fit

    def fit_lands_after_the_read(learner_id):
        fit = real(learner_id)
        MemoryParameters.objects.create(
            learner_id=learner_id, parameters=w, fitted=True, reviews_used=400, fitted_at=at
        )
        return fit

    monkeypatch.setattr(memory_service, "learner_fit", fit_lands_after_the_read)
    services.review_record(learner=learner, card=cards[0], result="pass", at=at)
    state = ReviewState.objects.get(learner=learner, card=cards[0])
    assert state.memory_as_of is None and state.last_reviewed_at == at
    later = (at + dt.timedelta(days=9)).date()
    recall = page_retrievability(learner=learner, card_ids=[cards[0].pk], today=later)
    assert recall[cards[0].pk] == pytest.approx(float(memory.retrievability(9, 20.0, w)), abs=1e-4)


@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_the_memory_from_the_log(learner, other_learner, deck):
    from django.db.migrations.executor import MigrationExecutor

    from .old_chain import migrate_to_latest

    cards = enrol(learner, deck)
    enrol(other_learner, deck)
    w = list(memory.DEFAULT_PARAMETERS)
    w[2] = 12.0
    MemoryParameters.objects.create(learner=other_learner, parameters=w, fitted=True)
    at = START
    for days, card, result in [(1, 0, "pass"), (3, 0, "fail"), (1, 1, "pass"), (4, 0, "pass")]:
        at += dt.timedelta(days=days)
        for who in (learner, other_learner):
            ReviewState.objects.filter(learner=who, card=cards[card]).update(due_on=at.date())
            services.review_record(learner=who, card=cards[card], result=result, at=at)
    undone = services.review_record(learner=learner, card=cards[2], result="fail", at=at)
    services.review_undo(learner=learner, review_id=undone.pk, at=at)
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([("cards", "0016_memoryparameters_history")])
        executor = MigrationExecutor(connection)
        executor.migrate([("cards", "0017_review_state_memory")])
    finally:
        migrate_to_latest(connection)
    for who in (learner, other_learner):
        assert_kept_is_replayed(who, at.date(), current={c.pk for c in cards})
    fitted = ReviewState.objects.get(learner=other_learner, card=cards[1])
    assert fitted.stability == pytest.approx(12.0)  # a first pass, under the learner's fit


def test_a_new_fit_stores_every_states_memory_under_it(learner, deck):
    from cards.services.memory import fit_learner

    rng = np.random.default_rng(3)
    extra = Card.objects.bulk_create(
        Card(deck=deck, kind="recall", prompt=f"B{i}", answer="A", position=10 + i)
        for i in range(40)
    )
    enrol(learner, deck)
    rows = []
    for card in extra:
        day = START.date()
        for _ in range(12):
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
    ReviewLog.objects.bulk_create(rows)  # written straight to the table, as a bulk load
    assert fit_learner(learner_id=learner.pk, at=START + dt.timedelta(days=400))
    fitted = MemoryParameters.objects.get(learner=learner)
    assert fitted.fitted and list(fitted.parameters) != list(memory.DEFAULT_PARAMETERS)
    assert_kept_is_replayed(learner, dt.date(2027, 6, 1), current={c.pk for c in extra})
