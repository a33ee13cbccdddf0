"""Reading a learner's profile never writes; the writes that need the row make it.

Every account gets its profile when it is made; a user made around that (a bulk load)
reads as a new profile would, and gets the row on its first profile change or pause.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from cards import selectors
from cards.models import LearnerProfile
from cards.services.profiles import profile_ensure

pytestmark = pytest.mark.django_db


@pytest.fixture
def bare(learner):
    """A learner whose profile row is missing, as after a bulk load of users."""
    LearnerProfile.objects.filter(user=learner).delete()
    learner.refresh_from_db()
    return type(learner).objects.get(pk=learner.pk)


def _api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_the_read_gives_the_defaults_and_writes_nothing(bare):
    with CaptureQueriesContext(connection) as ctx:
        profile = selectors.learner_profile(bare)
    assert profile.pk is None
    assert (profile.timezone, profile.day_starts_at, profile.reminders) == (
        LearnerProfile().timezone,
        LearnerProfile().day_starts_at,
        LearnerProfile().reminders,
    )
    assert not any(q["sql"].lstrip().upper().startswith("INSERT") for q in ctx.captured_queries)
    assert not LearnerProfile.objects.filter(user=bare).exists()
    assert selectors.learner_profile(bare) is profile  # cached on the user


def test_profile_ensure_makes_the_row_once(bare, learner):
    made = profile_ensure(bare)
    assert made.pk is not None and made.user_id == bare.pk
    assert profile_ensure(bare) == made
    assert selectors.learner_profile(bare) == made
    # A learner with a profile keeps the one they have.
    assert profile_ensure(learner).pk == LearnerProfile.objects.get(user=learner).pk


def test_the_api_reads_defaults_and_a_change_makes_the_row(bare):
    api = _api(bare)
    body = api.get("/api/v1/me/").json()
    assert body["timezone"] == "UTC" and body["day_starts_at"] == 4
    assert not LearnerProfile.objects.filter(user=bare).exists()
    response = api.patch("/api/v1/me/", {"day_starts_at": 6}, format="json")
    assert response.status_code == 200, response.content
    assert LearnerProfile.objects.get(user=bare).day_starts_at == 6


def test_a_pause_makes_the_row(bare):
    api = _api(bare)
    start = api.get("/api/v1/stats/").json()["today"]
    response = api.post("/api/v1/me/pause/", {"start": start, "days": 3}, format="json")
    assert response.status_code == 200, response.content
    profile = LearnerProfile.objects.get(user=bare)
    assert (profile.pause_start, profile.pause_days) == (dt.date.fromisoformat(start), 3)
