"""A Redis that hangs costs one timeout per cooldown, not one per request.

The cache's connection pool opens its circuit after a failure: for ``circuit_cooldown``
seconds every command fails at once, and the rate limits, which fail open, let requests
through without waiting. Each opening is logged once.
"""

from __future__ import annotations

import logging
import socket
import time

import pytest
from django.conf import settings
from django.core.cache.backends.redis import RedisCache
from django.test import override_settings

from studyapp.common.cache import CacheSkipped, CircuitBreaker

TIMEOUT = 0.5
COOLDOWN = 1.5  # longer than fifty skipped commands take on a loaded machine


@pytest.fixture
def hung_redis():
    """A Redis address that accepts connections and never answers (a paused Redis)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(64)  # the kernel completes the handshakes; nobody reads
    yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"
    server.close()


def _hung_cache_settings(location: str, cooldown: float) -> dict:
    """The project's cache settings, pointed at ``location`` with a short timeout."""
    cache = dict(settings.CACHES["default"])
    options = dict(cache["OPTIONS"])
    options.update(socket_timeout=TIMEOUT, socket_connect_timeout=TIMEOUT)
    if "circuit_cooldown" in options:
        options["circuit_cooldown"] = cooldown
    return {**cache, "LOCATION": location, "OPTIONS": options}


def _warnings(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "studyapp.common.cache" and r.levelno == logging.WARNING
    ]


@pytest.mark.redis
def test_a_hung_redis_costs_one_timeout_per_cooldown(hung_redis, caplog):
    params = _hung_cache_settings(hung_redis, cooldown=COOLDOWN)
    cache = RedisCache(params["LOCATION"], params)
    began = time.monotonic()
    with pytest.raises(Exception):  # noqa: B017 - redis-py's timeout, whichever it names
        cache.get("k")
    assert time.monotonic() - began >= TIMEOUT * 0.9
    began = time.monotonic()
    for _ in range(50):
        with pytest.raises(CacheSkipped):
            cache.set("k", 1)
    assert time.monotonic() - began < TIMEOUT  # fifty commands, and not one waited a timeout
    assert len(_warnings(caplog)) == 1
    # After the cooldown Redis is asked again, and its failure opens the circuit again.
    time.sleep(COOLDOWN)
    began = time.monotonic()
    with pytest.raises(Exception) as raised:
        cache.get("k")
    assert not isinstance(raised.value, CacheSkipped)
    assert time.monotonic() - began >= TIMEOUT * 0.9
    assert len(_warnings(caplog)) == 2


@pytest.mark.redis
@pytest.mark.django_db
def test_requests_with_limits_on_do_not_wait_for_a_hung_redis(api, hung_redis, settings):
    settings.STUDY_THROTTLE_RATES = {**settings.STUDY_THROTTLE_RATES, "user": "1000/minute"}
    with override_settings(CACHES={"default": _hung_cache_settings(hung_redis, cooldown=30)}):
        assert api.get("/api/v1/decks/").status_code == 200  # pays the timeout once
        began = time.monotonic()
        statuses = [api.get("/api/v1/decks/").status_code for _ in range(10)]
        took = time.monotonic() - began
    assert statuses == [200] * 10  # the limits fail open
    assert took < 10 * TIMEOUT / 2  # ten requests took less than half a timeout each


def test_the_breaker_opens_for_its_cooldown_and_closes_on_success(caplog):
    now = [100.0]
    breaker = CircuitBreaker(name="redis:6379", cooldown=5, clock=lambda: now[0])
    breaker.before()  # closed: nothing raised
    breaker.failed(TimeoutError("Timeout reading from socket"))
    breaker.failed(TimeoutError("again, while open"))  # the same opening
    now[0] += 4.9
    with pytest.raises(CacheSkipped, match="redis:6379"):
        breaker.before()
    now[0] += 0.1
    breaker.before()  # the cooldown is over: Redis is tried again
    breaker.failed(TimeoutError("still hung"))  # a new opening
    assert breaker.openings == 2
    assert len(_warnings(caplog)) == 2
    now[0] += 5
    breaker.succeeded()
    breaker.before()
    assert breaker.open_until is None
    assert any("answers again" in r.getMessage() for r in caplog.records)


@pytest.mark.redis
def test_the_project_cache_uses_the_breaking_pool():
    assert settings.CACHES["default"]["OPTIONS"]["pool_class"] == (
        "studyapp.common.cache.CircuitBreakerPool"
    )
