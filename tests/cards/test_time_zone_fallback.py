"""An unknown time zone studies on UTC: one pure rule, used by every reader of the study day."""

from __future__ import annotations

import datetime as dt
import logging
from zoneinfo import ZoneInfo

import pytest
import time_machine
from django.test import Client

from cards import ladder, selectors
from cards.models import LearnerProfile, ReviewLog, ReviewState
from cards.services.profiles import profile_ensure
from exercises.models import Prediction

START = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize("name", ["Europe/Berlin", "UTC", "Etc/UTC", "Pacific/Kiritimati"])
def test_a_known_zone_is_itself(name):
    zone = ladder.zone_or_utc(name)
    assert zone == ZoneInfo(name) and zone.key == name


@pytest.mark.parametrize(
    "name",
    [
        "Atlantis/Capital",  # not in the zone database: ZoneInfoNotFoundError (a KeyError)
        "utc",  # names are case-sensitive
        "America",  # a folder of the zone database: OSError
        "",  # ValueError
        "../etc/passwd",  # ValueError
        "/etc/localtime",  # ValueError
        "Europe/Berlin\x00",  # ValueError
    ],
)
def test_an_unknown_zone_is_utc_and_says_so_by_its_key(name):
    zone = ladder.zone_or_utc(name)
    assert zone == ZoneInfo("UTC") and zone.key != name


def test_the_fallback_zone_gives_the_utc_study_day_and_start():
    at = dt.datetime(2026, 3, 2, 2, 30, tzinfo=dt.UTC)
    zone = ladder.zone_or_utc("Atlantis/Capital")
    assert ladder.study_day(at, zone, 4) == ladder.study_day(at, "UTC", 4) == dt.date(2026, 3, 1)
    assert ladder.study_day_start(dt.date(2026, 3, 1), zone, 4) == dt.datetime(
        2026, 3, 1, 4, tzinfo=dt.UTC
    )


# --- Selectors and the public contract ------------------------------------------------------


def _set_zone(learner, name: str, day_starts_at: int = 4) -> None:
    profile_ensure(learner)
    LearnerProfile.objects.filter(user=learner).update(timezone=name, day_starts_at=day_starts_at)
    learner.refresh_from_db()


@pytest.mark.django_db
def test_learner_today_warns_once_per_call_and_studies_on_utc(learner, caplog):
    _set_zone(learner, "Atlantis/Capital")
    at = dt.datetime(2026, 3, 2, 3, 59, tzinfo=dt.UTC)
    with caplog.at_level(logging.WARNING, logger="cards.selectors"):
        assert selectors.learner_today(learner=learner, at=at) == dt.date(2026, 3, 1)
    assert [r.getMessage() for r in caplog.records] == [
        f"Learner {learner.pk} has an unknown time zone 'Atlantis/Capital'; using UTC"
    ]


@pytest.mark.django_db
def test_learner_today_in_a_known_zone_does_not_warn(learner, caplog):
    _set_zone(learner, "Pacific/Kiritimati")  # UTC+14: 15:00 UTC is 05:00 the next day
    at = dt.datetime(2026, 3, 2, 15, 0, tzinfo=dt.UTC)
    with caplog.at_level(logging.WARNING, logger="cards.selectors"):
        assert selectors.learner_today(learner=learner, at=at) == dt.date(2026, 3, 3)
    assert not caplog.records


@pytest.mark.django_db
def test_stats_count_predictions_from_the_utc_start_of_the_window(api, learner):
    _set_zone(learner, "Atlantis/Capital")
    # Today is 2026-03-02; the 30-day window starts on study day 2026-02-01 at 04:00 UTC.
    for hour in (3, 5):
        Prediction.objects.create(
            owner=learner,
            ask="playground:bag",
            answer="bag",
            expected="bag",
            correct=True,
            created_at=dt.datetime(2026, 2, 1, hour, tzinfo=dt.UTC),
        )
    with time_machine.travel(START, tick=False):
        response = api.get("/api/v1/stats/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["today"] == "2026-03-02"
    assert body["predictions_30d"] == {"made": 1, "right": 1, "accuracy": 1.0}


@pytest.mark.django_db
def test_a_review_is_recorded_on_the_utc_study_day(api, learner, deck):
    _set_zone(learner, "America")
    assert api.post(f"/api/v1/decks/{deck.slug}/enroll/").status_code == 200
    card = deck.cards.filter(kind="recall").first()
    ReviewState.objects.filter(learner=learner).update(due_on=dt.date(2026, 3, 1))
    # 03:30 UTC with a 04:00 day start: still study day 2026-03-01.
    with time_machine.travel(dt.datetime(2026, 3, 2, 3, 30, tzinfo=dt.UTC), tick=False):
        response = api.post("/api/v1/reviews/", {"card": card.pk, "result": "pass"}, format="json")
    assert response.status_code == 201, response.content
    assert ReviewLog.objects.get(learner=learner).study_day == dt.date(2026, 3, 1)
    assert response.json()["due_on"] == "2026-03-04"


@pytest.mark.django_db
def test_the_review_page_serves_a_learner_whose_zone_is_gone(learner, deck):
    client = Client()
    client.force_login(learner)
    _set_zone(learner, "Atlantis/Capital")
    with time_machine.travel(START - dt.timedelta(days=1), tick=False):
        assert client.post(f"/decks/{deck.slug}/enroll/").status_code == 302
    with time_machine.travel(START, tick=False):
        page = client.get("/review/")
    assert page.status_code == 200
    assert page.context["today"] == dt.date(2026, 3, 2)
    assert page.context["card"].deck_id == deck.pk
