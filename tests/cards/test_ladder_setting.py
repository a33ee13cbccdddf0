"""STUDY_LADDER_DAYS: checked at start, followed end to end, and a shortened ladder's rule.

The default is written once (``cards.ladder.DEFAULT_LADDER``); the setting is read by
``cards.ladder.parse_ladder``; a step the ladder lacks stands on its top rung
(``cards.ladder.rung``).
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest
import time_machine
from django.db import IntegrityError, transaction

from cards import ladder
from cards.checks import ladder_setting_check
from cards.models import Card, ReviewLog, ReviewState

from .conftest import START

ROOT = Path(__file__).resolve().parent.parent.parent
SIX = (1, 3, 7, 14, 30, 60)
D = dt.date


# --- The pure rules ------------------------------------------------------------------------


def test_the_default_is_written_once_and_read_back_from_its_text():
    assert ladder.parse_ladder(ladder.describe(sep=",")) == ladder.DEFAULT_LADDER
    assert ladder.parse_ladder(" 1, 3 ,7,14,30,60 ") == SIX
    assert ladder.describe(SIX) == "1, 3, 7, 14, 30, 60"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("1,3,x", "rung 3 is 'x'; write whole days separated by commas"),
        ("1,3,,7", "rung 3 is ''"),
        ("1,-3", "rung 2 is '-3'"),
        ("1.5,3", "rung 1 is '1.5'"),
        ("7", "it has 1 rung; a ladder needs at least 2"),
        ("", "rung 1 is ''"),
        ("0,3", "rung 1 is 0; each rung is a whole number of days from 1 to 3650"),
        ("1,3,9999", "rung 3 is 9999"),
        ("1,3,3", "rung 3 (3 days) is not longer than rung 2 (3 days)"),
        ("1,7,3", "rung 3 (3 days) is not longer than rung 2 (7 days)"),
        ("1,\N{ARABIC-INDIC DIGIT THREE}", "rung 2 is"),
    ],
)
def test_a_bad_ladder_is_refused_saying_what_is_wrong(text, says):
    with pytest.raises(ValueError) as refused:
        ladder.parse_ladder(text)
    assert says in str(refused.value)


def test_a_ladder_of_values_that_are_not_whole_days_is_named():
    assert ladder.ladder_problem((1, True)) is not None
    assert ladder.ladder_problem((1, 2.0)) is not None
    assert ladder.ladder_problem(()) == "it has 0 rungs; a ladder needs at least 2"
    assert ladder.ladder_problem(SIX) is None


def test_a_step_the_ladder_lacks_stands_on_its_top_rung():
    five = ladder.DEFAULT_LADDER
    assert [ladder.rung(step, five) for step in range(7)] == [0, 1, 2, 3, 4, 4, 4]
    assert ladder.interval_days(5, five) == 30
    today = D(2026, 3, 10)
    # A pass keeps it at the top, a fail returns it to rung 0: py-fsrs's rule for a step
    # past a shortened list of learning steps.
    assert ladder.review(5, "pass", today, five) == ladder.Schedule(4, 30, D(2026, 4, 9))
    assert ladder.review(5, "fail", today, five) == ladder.Schedule(0, 1, D(2026, 3, 11))
    # On a longer ladder the same step is a rung like any other.
    assert ladder.review(4, "pass", today, SIX) == ladder.Schedule(5, 60, D(2026, 5, 9))
    with pytest.raises(ValueError, match="step must be 0 or more"):
        ladder.rung(-1, five)


# --- At start ----------------------------------------------------------------------------


def _settings_in_a_process(ladder_days: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "STUDY_LADDER_DAYS"}
    environ.update(STUDY_LADDER_DAYS=ladder_days, DJANGO_SETTINGS_MODULE="studyapp.settings")
    code = (
        "import django; from django.conf import settings; django.setup(); "
        "print(settings.STUDY_LADDER_DAYS)"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_bad_setting_stops_the_start_naming_the_setting_and_what_is_wrong():
    started = _settings_in_a_process("1,3,7,14,30,60")
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip().splitlines()[-1] == "(1, 3, 7, 14, 30, 60)"

    refused = _settings_in_a_process("1,3,7,7")
    assert refused.returncode != 0
    last = refused.stderr.strip().splitlines()[-1]
    assert last == (
        "django.core.exceptions.ImproperlyConfigured: STUDY_LADDER_DAYS='1,3,7,7' is not a "
        "ladder: rung 4 (7 days) is not longer than rung 3 (7 days); each rung must be "
        "longer than the one before"
    )


def test_the_system_check_refuses_a_ladder_written_into_the_settings(settings):
    assert ladder_setting_check() == []
    settings.STUDY_LADDER_DAYS = (3, 1)
    (error,) = ladder_setting_check()
    assert error.id == "cards.E001"
    assert "STUDY_LADDER_DAYS=(3, 1) is not a ladder: rung 2 (1 day)" in error.msg
    settings.STUDY_LADDER_DAYS = "1,3,7"
    (error,) = ladder_setting_check()
    assert "it is str, not a tuple of days" in error.msg


# --- End to end --------------------------------------------------------------------------


def _at_noon(day: str) -> dt.datetime:
    return dt.datetime.combine(D.fromisoformat(day), dt.time(12), tzinfo=dt.UTC)


def _review(api, card: Card, result: str) -> dict:
    answer = api.post("/api/v1/reviews/", {"card": card.pk, "result": result}, format="json")
    assert answer.status_code == 201, answer.content
    return answer.json()


def _climb(api, card: Card, traveller, passes: int) -> list[tuple[int, int, int]]:
    """Pass ``card`` on each of its next due days: (step before, step, interval) each time."""
    seen = []
    for _ in range(passes):
        due = api.get("/api/v1/reviews/due/").json()
        assert card.pk in [item["card"]["id"] for item in due["results"]]
        body = _review(api, card, "pass")
        seen.append((body["step_before"], body["step"], body["interval_days"]))
        traveller.move_to(_at_noon(body["due_on"]))
    return seen


@pytest.mark.django_db
def test_a_six_rung_ladder_runs_through_the_api(api, learner, deck, settings):
    settings.STUDY_LADDER_DAYS = SIX
    card, other = Card.objects.filter(deck=deck).order_by("position")[:2]
    with time_machine.travel(START, tick=False) as traveller:
        assert api.post("/api/v1/decks/attention/enroll/").status_code == 200
        traveller.move_to(START + dt.timedelta(days=1))
        seen = _climb(api, card, traveller, passes=6)
        # Passing at step 4 reaches the sixth rung; passing at step 5 stays there.
        assert seen == [(0, 1, 3), (1, 2, 7), (2, 3, 14), (3, 4, 30), (4, 5, 60), (5, 5, 60)]

        due = api.get("/api/v1/reviews/due/").json()
        (item,) = [i for i in due["results"] if i["card"]["id"] == card.pk]
        assert (item["step"], item["interval_days"]) == (5, 60)
        stats = api.get("/api/v1/stats/").json()
        assert list(stats["by_step"]) == ["0", "1", "2", "3", "4", "5"]
        assert stats["by_step"]["5"] == 1

        # A miss at the sixth rung returns the card to one day, and an undo puts it back.
        miss = _review(api, card, "fail")
        assert (miss["step_before"], miss["step"], miss["interval_days"]) == (5, 0, 1)
        undo = api.post(f"/api/v1/reviews/{miss['id']}/undo/")
        assert undo.status_code == 200, undo.content
        assert (undo.json()["step"], undo.json()["interval_days"]) == (5, 60)
        # The other cards, never reviewed, still wait on rung 0.
        assert ReviewState.objects.get(learner=learner, card=other).step == 0


@pytest.mark.django_db
def test_cards_above_a_shortened_ladder_stand_on_its_top_rung(api, learner, deck, settings):
    cards = list(Card.objects.filter(deck=deck).order_by("position")[:3])
    with time_machine.travel(START, tick=False):
        assert api.post("/api/v1/decks/attention/enroll/").status_code == 200
    # Three cards climbed to the sixth rung of a longer ladder, due on day 1.
    ReviewState.objects.filter(learner=learner, card__in=cards).update(step=5)
    settings.STUDY_LADDER_DAYS = ladder.DEFAULT_LADDER
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        due = api.get("/api/v1/reviews/due/").json()
        shown = {i["card"]["id"]: (i["step"], i["interval_days"]) for i in due["results"]}
        assert [shown[c.pk] for c in cards] == [(5, 30)] * 3
        assert api.get("/api/v1/stats/").json()["by_step"] == {
            "0": 1,
            "1": 0,
            "2": 0,
            "3": 0,
            "4": 3,
        }
        passed = _review(api, cards[0], "pass")
        assert (passed["step_before"], passed["step"], passed["interval_days"]) == (5, 4, 30)
        failed = _review(api, cards[1], "fail")
        assert (failed["step_before"], failed["step"], failed["interval_days"]) == (5, 0, 1)
        undo = api.post(f"/api/v1/reviews/{failed['id']}/undo/")
        assert undo.status_code == 200, undo.content
        assert (undo.json()["step"], undo.json()["interval_days"]) == (5, 30)
        compensating = ReviewLog.objects.get(undo_of_id=failed["id"])
        assert compensating.interval_days == 30
        # The stored step is left to the card's next review: a ladder lengthened again
        # before then finds the card where it was.
        assert ReviewState.objects.get(learner=learner, card=cards[2]).step == 5


@pytest.mark.django_db
def test_the_database_bounds_the_step_below_only(learner, deck):
    card = Card.objects.filter(deck=deck).first()
    state = ReviewState.objects.create(learner=learner, card=card, step=0, due_on=START.date())
    ReviewState.objects.filter(pk=state.pk).update(step=12)
    with pytest.raises(IntegrityError), transaction.atomic():
        ReviewState.objects.filter(pk=state.pk).update(step=-1)
    state.refresh_from_db()
    assert state.step == 12


def test_the_landing_page_names_the_ladder_of_the_setting(client, settings):
    settings.STUDY_LADDER_DAYS = SIX
    page = client.get("/")
    assert page.status_code == 200
    assert "on a 1, 3, 7, 14, 30, 60-day ladder" in page.content.decode()
