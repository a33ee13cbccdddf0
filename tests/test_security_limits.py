"""Rate limits per scope and the log-in lockout, through the API and the web pages."""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import time_machine
from django.core import mail
from rest_framework.test import APIClient

from studyapp.throttling import StudyThrottle

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "s3cret-pass!"


def assert_throttled(response):
    assert response.status_code == 429, response.content
    assert int(response["Retry-After"]) >= 1
    detail = response.json()["detail"]
    assert isinstance(detail, str) and re.search(r"\d+ seconds?", detail), detail


# --- API scopes ---------------------------------------------------------------------


@pytest.mark.django_db
def test_register_is_limited_per_address_and_says_when(limits, anon_api):
    limits(register="3/hour")
    for i in range(3):
        body = {"username": f"new{i}", "password": "a-long-passphrase", "email": "x@example.org"}
        assert anon_api.post("/api/v1/auth/register/", body, format="json").status_code == 201
    body = {"username": "new9", "password": "a-long-passphrase", "email": "x@example.org"}
    response = anon_api.post("/api/v1/auth/register/", body, format="json")
    assert_throttled(response)
    assert int(response["Retry-After"]) > 3000  # an hour's window
    from django.contrib.auth import get_user_model

    assert not get_user_model().objects.filter(username="new9").exists()
    # Another address has its own count.
    other = APIClient(REMOTE_ADDR="10.9.9.9")
    assert other.post("/api/v1/auth/register/", body, format="json").status_code == 201


@pytest.mark.django_db
def test_token_login_is_limited_per_address(limits, anon_api, make_user):
    limits(login="2/minute")
    make_user("erin", password=PASSWORD)
    for _ in range(2):
        ok = anon_api.post(
            "/api/v1/auth/token/", {"username": "erin", "password": PASSWORD}, format="json"
        )
        assert ok.status_code == 200
    assert_throttled(
        anon_api.post(
            "/api/v1/auth/token/", {"username": "erin", "password": PASSWORD}, format="json"
        )
    )


@pytest.mark.django_db
def test_password_reset_is_limited(limits, anon_api):
    limits(password_reset="1/hour")
    body = {"email": "who@example.org"}
    assert anon_api.post("/api/v1/auth/password-reset/", body, format="json").status_code == 202
    assert_throttled(anon_api.post("/api/v1/auth/password-reset/", body, format="json"))


@pytest.mark.django_db
def test_exercise_scopes_and_playground_count_per_learner(limits, api, other_api):
    limits(exercise_create="2/minute", exercise_submit="1/minute", playground="1/minute")
    created = [
        api.post("/api/v1/exercises/", {"kind": "attention"}, format="json") for _ in range(2)
    ]
    assert [r.status_code for r in created] == [201, 201]
    assert_throttled(api.post("/api/v1/exercises/", {"kind": "attention"}, format="json"))
    # The other learner is not affected, and reading is not exercise creation.
    assert other_api.post("/api/v1/exercises/", {"kind": "attention"}, format="json").status_code
    assert api.get("/api/v1/exercises/").status_code == 200

    exercise_id = created[0].json()["id"]
    first = api.post(f"/api/v1/exercises/{exercise_id}/submit/", {"answers": {}}, format="json")
    assert first.status_code == 400  # malformed answers still count as a submission
    assert_throttled(
        api.post(f"/api/v1/exercises/{exercise_id}/submit/", {"answers": {}}, format="json")
    )

    head = {"Q": [[1, 0]], "K": [[1, 0]], "V": [[1, 2]]}
    assert api.post("/api/v1/attention/", head, format="json").status_code == 200
    assert_throttled(api.post("/api/v1/attention/", head, format="json"))


@pytest.mark.django_db
def test_every_other_authenticated_request_counts_against_user(limits, api, anon_api):
    limits(user="3/minute")
    assert [api.get("/api/v1/me/").status_code for _ in range(3)] == [200] * 3
    assert_throttled(api.get("/api/v1/stats/"))
    # Anonymous requests to open endpoints are not counted against a learner.
    assert anon_api.get("/api/schema/").status_code == 200


@pytest.mark.django_db
def test_off_disables_a_scope(limits, api):
    limits(user=None)
    assert {api.get("/api/v1/me/").status_code for _ in range(30)} == {200}


def test_rates_come_from_the_environment_and_bad_ones_stop_the_start():
    script = (
        "from django.conf import settings; import django; django.setup(); "
        "print(settings.STUDY_THROTTLE_RATES['register'], settings.STUDY_THROTTLE_RATES['user'],"
        " settings.STUDY_THROTTLE_RATES['login'])"
    )
    env = {**os.environ, "STUDY_THROTTLE_REGISTER": "20/hour", "STUDY_THROTTLE_USER": "off"}
    env.pop("STUDY_THROTTLE_LOGIN", None)
    env["DJANGO_SETTINGS_MODULE"] = "studyapp.settings"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["20/hour", "None", "30/minute"]
    env["STUDY_THROTTLE_PLAYGROUND"] = "lots"
    bad = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert bad.returncode != 0 and "STUDY_THROTTLE_PLAYGROUND" in bad.stderr


@pytest.mark.django_db
def test_a_cache_that_fails_lets_requests_through(limits, api, monkeypatch):
    limits(user="1/minute")

    def broken(*args, **kwargs):
        raise ConnectionError("cache down")

    monkeypatch.setattr(StudyThrottle, "cache", type("Broken", (), {"get": broken})())
    assert [api.get("/api/v1/me/").status_code for _ in range(3)] == [200] * 3


@pytest.mark.redis
@pytest.mark.django_db
def test_counters_are_shared_through_redis(settings, api, learner):
    # Two processes with the same REDIS_URL see one count: here, two cache clients.
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ["REDIS_URL"],
            "KEY_PREFIX": f"test-{uuid.uuid4()}",
        }
    }
    settings.STUDY_THROTTLE_RATES = {**settings.STUDY_THROTTLE_RATES, "user": "2/minute"}
    assert api.get("/api/v1/me/").status_code == 200
    key = f"throttle:user:{learner.pk}"
    import redis

    raw = redis.Redis.from_url(os.environ["REDIS_URL"])
    stored = [k for k in raw.keys(f"{settings.CACHES['default']['KEY_PREFIX']}:*") if key in str(k)]
    assert stored, "the counter is in Redis"
    assert api.get("/api/v1/me/").status_code == 200
    assert_throttled(api.get("/api/v1/me/"))
    raw.delete(*stored)


# --- Web forms ----------------------------------------------------------------------


@pytest.mark.django_db
def test_web_signup_and_login_forms_are_limited(limits, client, make_user):
    limits(register="1/hour", login="2/minute")
    form = {
        "username": "web1",
        "password1": "a-long-passphrase",
        "password2": "a-long-passphrase",
        "timezone": "UTC",
    }
    assert client.post("/signup/", form).status_code == 302
    client.logout()
    again = client.post("/signup/", {**form, "username": "web2"})
    assert again.status_code == 429 and int(again["Retry-After"]) > 0
    assert "Try again in" in again.content.decode()
    assert client.get("/signup/").status_code == 200  # only submissions count

    for _ in range(2):
        client.post("/login/", {"username": "nobody", "password": "x"})
    blocked = client.post("/login/", {"username": "nobody", "password": "x"})
    assert blocked.status_code == 429 and int(blocked["Retry-After"]) > 0


# --- Lockout ------------------------------------------------------------------------


def _token(client, password):
    return client.post(
        "/api/v1/auth/token/", {"username": "frank", "password": password}, format="json"
    )


@pytest.mark.django_db
def test_failed_logins_lock_the_username_across_web_and_api_and_addresses(settings, make_user):
    settings.AXES_FAILURE_LIMIT = 5
    make_user("frank", password=PASSWORD)
    from django.test import Client

    for i in range(3):
        web = Client(REMOTE_ADDR=f"10.0.0.{i}")
        assert web.post("/login/", {"username": "frank", "password": "wrong"}).status_code == 200
    api = APIClient(REMOTE_ADDR="10.0.1.1")
    assert _token(api, "wrong").status_code == 400
    fifth = _token(APIClient(REMOTE_ADDR="10.0.1.2"), "wrong")
    assert fifth.status_code == 429

    # Locked: the right password is refused too, from anywhere, with when and the way back.
    right = _token(APIClient(REMOTE_ADDR="10.0.2.2"), PASSWORD)
    assert right.status_code == 429
    assert 800 <= int(right["Retry-After"]) <= 900
    detail = right.json()["detail"]
    assert "locked" in detail and "15 minutes" in detail and "password-reset" in detail
    page = Client(REMOTE_ADDR="10.0.3.3").post(
        "/login/", {"username": "frank", "password": PASSWORD}
    )
    assert page.status_code == 429 and int(page["Retry-After"]) > 0
    html = page.content.decode()
    assert "locked" in html and "/password/reset/" in html
    assert "_auth_user_id" not in page.client.session


@pytest.mark.django_db
def test_the_lock_ends_after_its_minutes_and_a_reset_ends_it_at_once(
    settings, make_user, django_capture_on_commit_callbacks
):
    settings.AXES_FAILURE_LIMIT = 2
    user = make_user("frank", password=PASSWORD)
    user.email = "frank@example.org"
    user.save()
    api = APIClient()
    _token(api, "wrong")
    _token(api, "wrong")
    assert _token(api, PASSWORD).status_code == 429
    with time_machine.travel(dt.datetime.now(dt.UTC) + dt.timedelta(minutes=16)):
        assert _token(api, PASSWORD).status_code == 200

    _token(api, "wrong")
    _token(api, "wrong")
    assert _token(api, PASSWORD).status_code == 429
    # The way back: a password reset by e-mail.
    mail.outbox.clear()
    from studyapp.celery import app

    app.conf.task_always_eager = True  # the worker that mails the link
    try:
        with django_capture_on_commit_callbacks(execute=True):
            reset = api.post(
                "/api/v1/auth/password-reset/", {"email": "frank@example.org"}, format="json"
            )
    finally:
        app.conf.task_always_eager = False
    assert reset.status_code == 202
    uid, token = re.search(r"uid: (\S+)\s+token: (\S+)", mail.outbox[0].body).groups()
    confirm = api.post(
        "/api/v1/auth/password-reset/confirm/",
        {"uid": uid, "token": token, "new_password": "another-long-passphrase"},
        format="json",
    )
    assert confirm.status_code == 204
    assert _token(api, "another-long-passphrase").status_code == 200


@pytest.mark.django_db
def test_a_successful_login_clears_earlier_failures(settings, make_user):
    settings.AXES_FAILURE_LIMIT = 3
    make_user("frank", password=PASSWORD)
    api = APIClient()
    for _ in range(2):
        _token(api, "wrong")
    assert _token(api, PASSWORD).status_code == 200
    for _ in range(2):
        assert _token(api, "wrong").status_code == 400
    assert _token(api, PASSWORD).status_code == 200
