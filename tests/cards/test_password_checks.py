"""Every check of the current password outside log-in counts toward the lockout.

Changing the password or the e-mail address and deleting the account, through the
API and the web pages, are guessing chances like a log-in: a wrong password counts
toward the username's lockout, and while the username is locked the right one is
refused there too (429 with Retry-After), as it is at the log-in.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db
PASSWORD = "s3cret-pass!"
NEW_PASSWORD = "a-brand-new-passphrase"
User = get_user_model()


def _api(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


_sessions: dict[int, Client] = {}


@pytest.fixture(autouse=True)
def _fresh_sessions():
    _sessions.clear()
    yield
    _sessions.clear()


def _web(user) -> Client:
    # One session per learner: each log-in would clear the failures counted so far.
    if user.pk not in _sessions:
        _sessions[user.pk] = Client()
        _sessions[user.pk].force_login(user)
    return _sessions[user.pk]


# Each place that asks for the current password: (user, password) -> response.
def api_password_change(user, password):
    return _api(user).post(
        "/api/v1/me/password/",
        {"old_password": password, "new_password": NEW_PASSWORD},
        format="json",
    )


def api_email_change(user, password):
    return _api(user).patch(
        "/api/v1/me/", {"email": "new@example.org", "password": password}, format="json"
    )


def api_account_delete(user, password):
    return _api(user).delete("/api/v1/me/", {"password": password}, format="json")


def web_password_change(user, password):
    return _web(user).post(
        "/password/change/",
        {"old_password": password, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )


def web_email_change(user, password):
    return _web(user).post(
        "/profile/",
        {
            "email": "new@example.org",
            "timezone": "UTC",
            "day_starts_at": 4,
            "reminder_hour": 18,
            "password": password,
        },
    )


def web_account_delete(user, password):
    return _web(user).post("/profile/delete/", {"delete-password": password})


PLACES: dict[str, Callable] = {
    "api-password": api_password_change,
    "api-email": api_email_change,
    "api-delete": api_account_delete,
    "web-password": web_password_change,
    "web-email": web_email_change,
    "web-delete": web_account_delete,
}


def _log_in(username, password=PASSWORD):
    return APIClient().post(
        "/api/v1/auth/token/", {"username": username, "password": password}, format="json"
    )


def _nothing_changed(user) -> None:
    user.refresh_from_db()  # still there
    assert user.check_password(PASSWORD)
    assert user.email == "old@example.org"


def _changes_without_a_password(user) -> None:
    api, web = _api(user), _web(user)
    for hour in range(3):
        assert api.patch("/api/v1/me/", {"reminder_hour": hour}, format="json").status_code == 200
        saved = web.post(
            "/profile/",
            {"email": user.email, "timezone": "UTC", "day_starts_at": 4, "reminder_hour": hour},
        )
        assert saved.status_code == 302
        missing = api.patch("/api/v1/me/", {"email": "x@example.org"}, format="json")
        assert missing.status_code == 400 and "password" in missing.json()


@pytest.mark.parametrize("place", PLACES)
def test_thirty_wrong_passwords_lock_the_username_and_refuse_the_right_one(
    settings, make_user, place
):
    settings.AXES_FAILURE_LIMIT = 5
    user = make_user("carol", password=PASSWORD)
    user.email = "old@example.org"
    user.save()
    attempt = PLACES[place]

    statuses = [attempt(user, f"guess-{i}").status_code for i in range(30)]
    assert statuses[:4] == [400] * 4  # wrong, and said so next to the field
    assert set(statuses[4:]) == {429}, statuses
    last = attempt(user, "guess-30")
    assert 800 <= int(last["Retry-After"]) <= 900
    assert "locked" in last.content.decode()

    # Locked: the right password is refused here and at the log-in, and nothing changed.
    right = attempt(user, PASSWORD)
    assert right.status_code == 429 and int(right["Retry-After"]) > 0
    _nothing_changed(user)
    assert _log_in("carol").status_code == 429
    assert Client().post("/login/", {"username": "carol", "password": PASSWORD}).status_code == 429

    # Until the lockout ends.
    with time_machine.travel(dt.datetime.now(dt.UTC) + dt.timedelta(minutes=16)):
        assert _log_in("carol").status_code == 200


@pytest.mark.parametrize("place", PLACES)
def test_wrong_passwords_here_and_at_the_log_in_count_together(settings, make_user, place):
    settings.AXES_FAILURE_LIMIT = 3
    user = make_user("carol", password=PASSWORD)
    user.email = "old@example.org"
    user.save()
    _web(user)  # signed in before the failures
    assert _log_in("carol", "wrong").status_code == 400
    assert PLACES[place](user, "wrong").status_code == 400
    _changes_without_a_password(user)  # they count nothing
    assert _log_in("carol", "wrong").status_code == 429
    assert PLACES[place](user, PASSWORD).status_code == 429
    _nothing_changed(user)


# --- The login limit ------------------------------------------------------------------


@pytest.mark.parametrize("place", PLACES)
def test_password_checks_share_the_login_limit(limits, settings, make_user, place):
    limits(login="2/minute")
    settings.AXES_FAILURE_LIMIT = 100  # the limit answers first here
    user = make_user("carol", password=PASSWORD)
    user.email = "old@example.org"
    user.save()
    _web(user)
    assert _log_in("carol", "wrong").status_code == 400
    _changes_without_a_password(user)  # they do not use the limit
    assert PLACES[place](user, "wrong").status_code == 400
    throttled = PLACES[place](user, PASSWORD)
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) > 0
    assert re.search(r"(available|Try again) in \d+ seconds", throttled.content.decode())
    _nothing_changed(user)


def test_the_admin_password_change_shares_the_login_limit(limits, make_user):
    limits(login="2/minute")
    staff = make_user("stella", staff=True)
    client = Client()
    client.force_login(staff)
    assert client.get("/admin/password_change/").status_code == 200
    body = {"old_password": "wrong", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    assert [client.post("/admin/password_change/", body).status_code for _ in range(2)] == [200] * 2
    throttled = client.post("/admin/password_change/", {**body, "old_password": PASSWORD})
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) > 0
    staff.refresh_from_db()
    assert staff.check_password(PASSWORD)
