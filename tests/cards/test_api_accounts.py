"""Registration, tokens and the profile, with the bad input the contract lists."""

import pytest
from django.contrib.auth import get_user_model

from cards.models import LearnerProfile

pytestmark = pytest.mark.django_db


def test_register_then_token_then_me(anon_api):
    response = anon_api.post(
        "/api/v1/auth/register/",
        {
            "username": "carol",
            "password": "a-long-passphrase",
            "email": "c@example.com",
            "timezone": "Asia/Tokyo",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["username"] == "carol" and len(body["token"]) == 40
    token = anon_api.post(
        "/api/v1/auth/token/", {"username": "carol", "password": "a-long-passphrase"}, format="json"
    ).json()["token"]
    assert token == body["token"]
    anon_api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    me = anon_api.get("/api/v1/me/").json()
    assert me == {
        "username": "carol",
        "email": "c@example.com",
        "email_confirmed": False,
        "timezone": "Asia/Tokyo",
        "day_starts_at": 4,
        "reminders": True,
        "reminder_hour": 9,
        "new_cards_per_day": 20,
        "theme": "auto",
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"username": "", "password": "a-long-passphrase"}, "username"),
        ({"username": "has space", "password": "a-long-passphrase"}, "username"),
        ({"username": "dave", "password": "123"}, "password"),
        (
            {"username": "dave", "password": "a-long-passphrase", "timezone": "Mars/Olympus"},
            "timezone",
        ),
        ({"username": "dave", "password": "a-long-passphrase", "email": "nope"}, "email"),
        ({"username": 5, "password": "a-long-passphrase"}, "username"),
        ({"username": "alice", "password": "a-long-passphrase"}, "username"),
    ],
)
def test_register_rejects_bad_input_and_creates_nothing(anon_api, learner, body, field):
    before = get_user_model().objects.count()
    response = anon_api.post("/api/v1/auth/register/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert get_user_model().objects.count() == before


def test_token_with_wrong_password_is_400(anon_api, learner):
    response = anon_api.post(
        "/api/v1/auth/token/", {"username": "alice", "password": "wrong"}, format="json"
    )
    assert response.status_code == 400
    assert "non_field_errors" in response.json()


def test_a_bad_token_is_401(anon_api):
    anon_api.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert anon_api.get("/api/v1/me/").status_code == 401


def test_patch_profile(api, learner):
    response = api.patch(
        "/api/v1/me/",
        {
            "timezone": "America/New_York",
            "day_starts_at": 0,
            "reminders": False,
            "reminder_hour": 20,
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    profile = LearnerProfile.objects.get(user=learner)
    assert (profile.timezone, profile.day_starts_at, profile.reminders, profile.reminder_hour) == (
        "America/New_York",
        0,
        False,
        20,
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"timezone": "Not/AZone"}, "timezone"),
        ({"day_starts_at": 24}, "day_starts_at"),
        ({"day_starts_at": -1}, "day_starts_at"),
        ({"day_starts_at": "4"}, "day_starts_at"),
        ({"reminder_hour": 7.5}, "reminder_hour"),
        ({"reminders": "yes"}, "reminders"),
        ({"email": "not-an-email"}, "email"),
    ],
)
def test_patch_profile_rejects_bad_input_and_changes_nothing(api, learner, body, field):
    response = api.patch("/api/v1/me/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    profile = LearnerProfile.objects.get(user=learner)
    assert (profile.timezone, profile.day_starts_at, profile.reminder_hour) == ("UTC", 4, 9)


def test_put_on_me_is_not_allowed(api):
    assert api.put("/api/v1/me/", {}, format="json").status_code == 405
