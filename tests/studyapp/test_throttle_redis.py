"""The per-learner limit on Redis: one script round trip, the same answers as DRF's window.

``StudyThrottle`` keeps DRF's sliding window in the cache. On Redis it runs one Lua
script per request; on any other cache, DRF's read-and-write of the history list.
Both must let the same requests through and advise the same waits.
"""

from __future__ import annotations

import os
import uuid
from types import SimpleNamespace

import pytest
import redis

from studyapp.throttling import StudyThrottle

pytestmark = pytest.mark.django_db

# (time in seconds, allowed?) for 3 requests a minute: refused requests are not counted,
# and a request leaves the window exactly `duration` seconds after it was let through.
SCHEDULE = [
    (1000.0, True),
    (1001.0, True),
    (1002.0, True),
    (1003.0, False),
    (1059.0, False),
    (1060.0, True),
    (1061.0, True),
    (1061.5, False),
    (1062.0, True),
    (1062.0, False),
]


def redis_cache(settings) -> str:
    prefix = f"test-{uuid.uuid4()}"
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ["REDIS_URL"],
            "KEY_PREFIX": prefix,
        }
    }
    return prefix


def local_cache(settings) -> None:
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"throttle-{uuid.uuid4()}",
        }
    }


def run_schedule(monkeypatch, learner_id: int = 41) -> list[tuple[bool, float | None]]:
    request = SimpleNamespace(
        user=SimpleNamespace(pk=learner_id, is_authenticated=True), method="GET", META={}
    )
    clock = {"now": 0.0}
    monkeypatch.setattr(StudyThrottle, "timer", lambda self: clock["now"])
    answers = []
    for at, _ in SCHEDULE:
        clock["now"] = at
        throttle = StudyThrottle()
        allowed = throttle.allow_request(request, SimpleNamespace())
        answers.append((allowed, None if allowed else round(throttle.wait(), 6)))
    return answers


@pytest.mark.redis
def test_redis_and_other_caches_let_the_same_requests_through_and_advise_the_same_wait(
    settings, monkeypatch
):
    settings.STUDY_THROTTLE_RATES = {**settings.STUDY_THROTTLE_RATES, "user": "3/minute"}
    local_cache(settings)
    expected = run_schedule(monkeypatch)
    assert [allowed for allowed, _ in expected] == [allowed for _, allowed in SCHEDULE]
    assert expected[3] == (False, 57.0)  # the oldest of three leaves the window at 1060
    assert expected[7] == (False, 0.5)
    prefix = redis_cache(settings)
    try:
        assert run_schedule(monkeypatch) == expected
    finally:
        raw = redis.Redis.from_url(os.environ["REDIS_URL"])
        keys = raw.keys(f"{prefix}:*")
        assert keys, "the window lives in Redis"
        assert all(raw.type(key) == b"zset" and 0 < raw.pttl(key) <= 60_000 for key in keys)
        raw.delete(*keys)


@pytest.mark.redis
def test_a_rate_of_zero_refuses_everything_on_both_caches(settings, monkeypatch):
    settings.STUDY_THROTTLE_RATES = {**settings.STUDY_THROTTLE_RATES, "user": "0/minute"}
    local_cache(settings)
    expected = run_schedule(monkeypatch)
    assert expected == [(False, 60.0)] * len(SCHEDULE)
    prefix = redis_cache(settings)
    assert run_schedule(monkeypatch) == expected
    raw = redis.Redis.from_url(os.environ["REDIS_URL"])
    assert raw.keys(f"{prefix}:*") == []  # nothing was let through, nothing stored


@pytest.mark.redis
def test_one_redis_command_per_request(settings, monkeypatch):
    settings.STUDY_THROTTLE_RATES = {**settings.STUDY_THROTTLE_RATES, "user": "100/minute"}
    prefix = redis_cache(settings)
    request = SimpleNamespace(user=SimpleNamespace(pk=7, is_authenticated=True), method="GET")
    StudyThrottle().allow_request(request, None)  # loads the script on a new server
    sent = []
    original = redis.Redis.execute_command

    def counting(self, *args, **options):
        sent.append(args[0])
        return original(self, *args, **options)

    monkeypatch.setattr(redis.Redis, "execute_command", counting)
    for _ in range(5):
        assert StudyThrottle().allow_request(request, None)
    assert sent == ["EVALSHA"] * 5
    raw = redis.Redis.from_url(os.environ["REDIS_URL"])
    raw.delete(*raw.keys(f"{prefix}:*"))


@pytest.mark.redis
def test_the_api_refuses_the_learner_over_the_limit_and_serves_them_after(
    settings, api, other_api, monkeypatch
):
    settings.STUDY_THROTTLE_RATES = {**settings.STUDY_THROTTLE_RATES, "user": "2/minute"}
    prefix = redis_cache(settings)
    clock = {"now": 5000.0}
    monkeypatch.setattr(StudyThrottle, "timer", lambda self: clock["now"])
    assert [api.get("/api/v1/reviews/due/").status_code for _ in range(2)] == [200, 200]
    refused = api.get("/api/v1/reviews/due/")
    assert refused.status_code == 429
    assert refused["Retry-After"] == "60"
    assert "60 seconds" in refused.json()["detail"]
    assert other_api.get("/api/v1/reviews/due/").status_code == 200  # per learner
    clock["now"] += 60
    assert api.get("/api/v1/reviews/due/").status_code == 200
    raw = redis.Redis.from_url(os.environ["REDIS_URL"])
    raw.delete(*raw.keys(f"{prefix}:*"))


def test_a_redis_that_does_not_answer_lets_requests_through(settings, api):
    settings.STUDY_THROTTLE_RATES = {**settings.STUDY_THROTTLE_RATES, "user": "1/minute"}
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",  # discard port: nothing listens
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }
    assert [api.get("/api/v1/me/").status_code for _ in range(3)] == [200] * 3
