"""``manage.py seed_load``: synthetic learners × cards review states, and ``--reset``."""

from __future__ import annotations

import datetime as dt
from io import StringIO

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from cards.ladder import DEFAULT_LADDER
from cards.models import Card, Enrollment, LearnerProfile, ReviewLog, ReviewState
from cards.synthetic import placement, synthetic_decks, synthetic_users

pytestmark = pytest.mark.django_db

# 12:00 UTC: past the default 04:00 day start, so the study day is the calendar date.
NOON = dt.datetime(2025, 3, 10, 12, 0, tzinfo=dt.UTC)
TODAY = dt.date(2025, 3, 10)
LADDER = DEFAULT_LADDER


def seed(*args: str) -> str:
    out = StringIO()
    with time_machine.travel(NOON, tick=False):
        call_command("seed_load", *args, stdout=out)
    return out.getvalue()


def test_small_run_creates_learners_times_cards_states():
    output = seed("--learners", "5", "--cards", "20", "--decks", "2", "--due-fraction", "0.25")

    users = synthetic_users()
    assert users.count() == 5
    assert LearnerProfile.objects.filter(user__in=users).count() == 5
    assert not any(u.has_usable_password() for u in users)
    assert list(synthetic_decks().values_list("slug", flat=True).order_by("slug")) == [
        "load-deck-1",
        "load-deck-2",
    ]
    for deck in synthetic_decks():
        assert deck.cards.count() == 10
    assert Card.objects.filter(deck__in=synthetic_decks()).count() == 20
    assert Enrollment.objects.filter(learner__in=users).count() == 5 * 2

    states = ReviewState.objects.filter(learner__in=users)
    assert states.count() == 5 * 20
    # Every (learner, card) pair exactly once.
    assert states.values("learner_id", "card_id").distinct().count() == 100
    due = states.filter(due_on__lte=TODAY).count()
    # The Kronecker placement spreads F evenly: 25 of 100, give or take one per learner.
    assert 20 <= due <= 30
    assert states.filter(due_on=TODAY).exists()
    assert states.filter(due_on__lt=TODAY).exists()
    assert set(states.values_list("step", flat=True)) == {0, 1, 2, 3, 4}
    for state in states.filter(due_on__gt=TODAY):
        # A future card is due within the interval of its step.
        assert state.due_on <= TODAY + dt.timedelta(days=LADDER[state.step])
    assert "100 review states" in output
    assert f"due on {TODAY}" in output


def test_states_follow_the_placement_formula_on_every_backend():
    seed("--learners", "3", "--cards", "10", "--seed", "7")
    for state in ReviewState.objects.filter(learner__in=synthetic_users()):
        assert (state.step, state.due_on) == placement(
            state.learner_id, state.card_id, 7, 0.2, TODAY, LADDER
        )
        if state.step > 0:
            assert state.last_reviewed_at == dt.datetime.combine(
                state.due_on - dt.timedelta(days=LADDER[state.step]), dt.time(12), dt.UTC
            )
        else:
            assert state.last_reviewed_at is None


def test_review_logs_match_their_states():
    seed("--learners", "4", "--cards", "25", "--log-fraction", "0.5")
    logs = ReviewLog.objects.filter(learner__in=synthetic_users())
    assert logs.exists()
    states = {
        (s.learner_id, s.card_id): s
        for s in ReviewState.objects.filter(learner__in=synthetic_users())
    }
    for log in logs:
        state = states[(log.learner_id, log.card_id)]
        assert (log.result, log.step_after, log.step_before) == ("pass", state.step, state.step - 1)
        assert log.due_after == state.due_on
        assert log.interval_days == LADDER[state.step]
        assert log.reviewed_at == state.last_reviewed_at


def test_rerun_tops_up_without_duplicates():
    seed("--learners", "3", "--cards", "10")
    logs_before = ReviewLog.objects.count()
    seed("--learners", "4", "--cards", "10")
    assert synthetic_users().count() == 4
    assert ReviewState.objects.filter(learner__in=synthetic_users()).count() == 40
    assert LearnerProfile.objects.filter(user__in=synthetic_users()).count() == 4
    # The three first learners' logs are not written twice.
    first_three = synthetic_users().order_by("username")[:3]
    assert ReviewLog.objects.filter(learner__in=list(first_three)).count() == logs_before


def test_reset_removes_synthetic_data_only(make_user):
    real = make_user("load-fan")  # a real user whose name merely starts with the prefix
    seed("--learners", "5", "--cards", "20")
    assert ReviewState.objects.exists()

    seed("--reset-only")

    assert not synthetic_users().exists()
    assert not synthetic_decks().exists()
    assert not ReviewState.objects.exists()
    assert not ReviewLog.objects.exists()
    assert not Enrollment.objects.exists()
    assert get_user_model().objects.filter(pk=real.pk).exists()
    assert LearnerProfile.objects.filter(user=real).exists()


def test_reset_then_reseed_replaces_the_data():
    seed("--learners", "5", "--cards", "20")
    seed("--reset", "--learners", "2", "--cards", "6")
    assert synthetic_users().count() == 2
    assert ReviewState.objects.filter(learner__in=synthetic_users()).count() == 12
    assert Card.objects.filter(deck__in=synthetic_decks()).count() == 6


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--learners", "-1"], "--learners"),
        (["--decks", "0"], "--decks"),
        (["--cards", "3", "--decks", "4"], "--decks"),
        (["--due-fraction", "1"], "--due-fraction"),
        (["--log-fraction", "1.5"], "--log-fraction"),
    ],
)
def test_bad_arguments_name_the_option_and_change_nothing(args, message):
    with pytest.raises(CommandError, match=message):
        seed(*args)
    assert not synthetic_users().exists()
