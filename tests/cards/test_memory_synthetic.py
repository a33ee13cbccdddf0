"""A synthetic learner whose recall follows a known FSRS model, reviewing on the ladder.

Every review goes through the service's own review path (``review_submit``, as
``POST reviews/`` records it) at a passed-in time; the learner recalls a card with the
true model's recall at that moment. The tests below read what ``stats/memory/`` makes of
the log; ``benchmarks/bench_memory.py`` reuses the learner.

2,000 reviews, as the figures are meant to be judged on: a few seconds, most of it the
review path itself.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import numpy as np
import pytest
import time_machine
from django.conf import settings
from rest_framework.test import APIClient

from cards import memory
from cards.due import queue_states
from cards.memory_simulation import Items, simulate
from cards.models import Card, Deck, LearnerProfile, MemoryParameters, ReviewState
from cards.services import enroll
from cards.services.memory import fit_learner
from cards.services.reviews import review_submit

START = dt.datetime(2026, 1, 5, 12, 0, tzinfo=dt.UTC)

# The true model: FSRS-6's defaults with slower forgetting at first and after a lapse,
# far enough from the defaults that a fit has something to learn.
TRUE_PARAMETERS = np.array(memory.DEFAULT_PARAMETERS)
TRUE_PARAMETERS[[0, 2, 8, 11]] = [0.6, 4.0, 1.6, 1.9]
FIRST_PASS = 0.75


@dataclass
class Truth:
    """The true memory of each card, and what the learner's reviews were."""

    stability: dict[int, float] = field(default_factory=dict)
    difficulty: dict[int, float] = field(default_factory=dict)
    last_day: dict[int, int] = field(default_factory=dict)
    # Per review after a card's first: (elapsed days, true recall, passed).
    reviews: list[tuple[int, float, bool]] = field(default_factory=list)
    days: int = 0


def make_deck(cards: int, slug: str = "synthetic") -> Deck:
    deck = Deck.objects.create(slug=slug, title="Synthetic")
    Card.objects.bulk_create(
        Card(deck=deck, kind="recall", prompt=f"P{i}", answer=f"A{i}", position=i)
        for i in range(cards)
    )
    return deck


def run(*, learner, deck: Deck, reviews: int, seed: int = 43) -> Truth:
    """Enrol ``learner`` in ``deck`` at START and review what is due each day until
    ``reviews`` reviews are recorded; returns the truth behind them.

    The due dates come from the service: the states after enrolment, then each recorded
    review's ``due_on`` (what ``POST reviews/`` answers).
    """
    profile = LearnerProfile.objects.get(user=learner)
    profile.new_cards_per_day = len(deck.cards.all())  # every card placed at enrolment
    profile.save(update_fields=["new_cards_per_day"])
    learner.profile = profile
    enroll(learner=learner, deck=deck, at=START)
    due = dict(queue_states(learner=learner, today=dt.date.max).values_list("card_id", "due_on"))
    rng = np.random.default_rng(seed)
    truth, done, day = Truth(), 0, 0
    while done < reviews:
        day += 1
        at = START + dt.timedelta(days=day)
        today = at.date()
        for card_id in sorted(c for c, on in due.items() if on <= today):
            if done >= reviews:
                break
            passed = _recall(truth, card_id, today.toordinal(), rng)
            body = review_submit(
                learner=learner,
                card=card_id,
                result="pass" if passed else "fail",
                at=at,
                present=lambda log: {"due_on": log.due_after},
            ).body
            due[card_id] = body["due_on"]
            done += 1
    truth.days = day
    return truth


def _recall(truth: Truth, card_id: int, ordinal: int, rng: np.random.Generator) -> bool:
    """Whether the learner recalls the card today under the true model; moves its memory."""
    w = TRUE_PARAMETERS
    seen = card_id in truth.stability
    elapsed = ordinal - truth.last_day[card_id] if seen else -1
    recall = (
        float(memory.retrievability(elapsed, truth.stability[card_id], w)) if seen else FIRST_PASS
    )
    passed = bool(rng.random() < recall)
    rating = memory.PASS_RATING if passed else memory.FAIL_RATING
    if seen:
        s, d = memory.next_state(
            truth.stability[card_id], truth.difficulty[card_id], elapsed, rating, w
        )
        truth.reviews.append((elapsed, recall, passed))
    else:
        s, d = memory.first_state(rating, w)
    truth.stability[card_id], truth.difficulty[card_id] = float(s), float(d)
    truth.last_day[card_id] = ordinal
    return passed


# The size: 2,000 reviews through the review path take about 3 s on PostgreSQL
# on an idle machine (more beside other work); benchmarks/bench_memory.py prints the same
# checks' figures.
REVIEWS = 2000
CARDS = 100


def memory_body(client: APIClient, day: dt.date) -> dict:
    with time_machine.travel(dt.datetime.combine(day, dt.time(12), tzinfo=dt.UTC), tick=False):
        response = client.get("/api/v1/stats/memory/", secure=True)
    assert response.status_code == 200, response.content
    return response.json()


def true_rung_recall(truth: Truth) -> list[float]:
    """Per rung: the mean true recall of the reviews binned there (what recall estimates)."""
    elapsed = np.array([r[0] for r in truth.reviews])
    recall = np.array([r[1] for r in truth.reviews])
    rung = memory.rung_of(elapsed, settings.STUDY_LADDER_DAYS)
    return [float(recall[rung == i].mean()) for i in range(len(settings.STUDY_LADDER_DAYS))]


def true_workloads(learner, truth: Truth, today: dt.date) -> list[float]:
    """Each policy's reviews over the horizon under the true model, from the true memory."""
    states = list(
        ReviewState.objects.filter(learner=learner).values_list("card_id", "step", "due_on")
    )
    origin = today.toordinal()
    items = Items(
        seen=np.array([c in truth.stability for c, _, _ in states]),
        stability=np.array([truth.stability.get(c, 1.0) for c, _, _ in states]),
        difficulty=np.array([truth.difficulty.get(c, 5.0) for c, _, _ in states]),
        last=np.array([truth.last_day.get(c, origin) - origin for c, _, _ in states]),
        step=np.array([s for _, s, _ in states]),
        due=np.array([max(d.toordinal() - origin, 0) for _, _, d in states]),
        w=TRUE_PARAMETERS,
        first_pass=FIRST_PASS,
    )
    outcomes = simulate(items, ladder=settings.STUDY_LADDER_DAYS, rng=np.random.default_rng(5))
    return [o.reviews for o in outcomes]


def measure(learner, truth: Truth) -> dict:
    """What stats/memory/ says before and after the weekly fit, beside the truth."""
    end = (START + dt.timedelta(days=truth.days)).date()
    client = APIClient()
    client.force_authenticate(learner)
    before = memory_body(client, end)
    fitted = fit_learner(learner_id=learner.pk, at=START + dt.timedelta(days=truth.days))
    again = fit_learner(learner_id=learner.pk, at=START + dt.timedelta(days=truth.days))
    after = memory_body(client, end)
    return {
        "before": before,
        "after": after,
        "fitted": fitted,
        "fitted_again": again,
        "true_recall": true_rung_recall(truth),
        "true_workloads": true_workloads(learner, truth, end),
    }


def rungs_holding_the_truth(figures: dict) -> list[bool]:
    return [
        r["low"] <= true <= r["high"]
        for r, true in zip(figures["before"]["rungs"], figures["true_recall"], strict=True)
    ]


@pytest.fixture
def figures(django_user_model):
    learner = django_user_model.objects.create_user(username="synthetic", password="x" * 12)
    truth = run(learner=learner, deck=make_deck(CARDS), reviews=REVIEWS)
    return learner, truth, measure(learner, truth)


@pytest.mark.django_db
def test_a_synthetic_learner_is_measured_as_the_true_model_says(figures):
    learner, truth, got = figures
    before, after = got["before"], got["after"]
    assert before["fsrs"]["fitted"] is False

    # The Wilson intervals hold the true recall of each rung. Each 95 % interval misses
    # with chance 5 %, so one miss among five happens about one run in four; two, one
    # in forty: one is allowed.
    rungs = before["rungs"]
    assert [r["interval_days"] for r in rungs] == list(settings.STUDY_LADDER_DAYS)
    assert sum(r["reviews"] for r in rungs) == len(truth.reviews) == REVIEWS - CARDS
    assert all(r["reviews"] >= memory.RUNG_MINIMUM for r in rungs)
    assert sum(rungs_holding_the_truth(got)) >= len(rungs) - 1, (rungs, got["true_recall"])

    # The weekly fit (three cuts, a second run a no-op), then the calibration of the
    # fitted models on the reviews they never saw.
    assert got["fitted"] and not got["fitted_again"]
    stored = MemoryParameters.objects.get(learner=learner)
    assert stored.fitted and len(stored.history) == 3
    assert after["fsrs"]["fitted"] and after["fsrs"]["reviews_used"] == len(truth.reviews)
    held_out = after["calibration"]["by_fitted_model"]
    assert held_out["reviews"] >= len(truth.reviews) // 3
    assert held_out["rmse_bins"] <= 0.05, after["calibration"]

    # The fitted model ranks the policies' workloads as the true model does.
    assert [(s["policy"], s["desired_retention"]) for s in after["simulation"]] == [
        ("ladder", None),
        ("fsrs", 0.8),
        ("fsrs", 0.9),
        ("fsrs", 0.95),
    ]
    workloads = [s["reviews"] for s in after["simulation"]]
    assert list(np.argsort(workloads)) == list(np.argsort(got["true_workloads"]))
