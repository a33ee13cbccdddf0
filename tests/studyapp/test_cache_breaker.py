"""A Redis that hangs costs one timeout per cooldown, not one per request.

The cache's connection pool opens its circuit after a failure: for ``circuit_cooldown``
seconds every command fails at once, and the rate limits, which fail open, let requests
through without waiting. Each opening is logged once.

The hung Redis here counts what it is sent, so the tests see which commands reached it
(each of which would wait a timeout) rather than time them; the breaker's cooldown runs
on a clock the test moves.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time

import pytest
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.test import override_settings

from studyapp.common.cache import CacheSkipped, CircuitBreaker

TIMEOUT = 0.5
COOLDOWN = 5


class HungRedis:
    """A Redis address that accepts connections and never answers (a paused Redis).

    A thread accepts each connection and holds it open; nobody reads, so what a client
    sends stays in the kernel's buffers, where ``received`` peeks at it.
    """

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.address = self.server.getsockname()
        self.url = f"redis://127.0.0.1:{self.address[1]}/0"
        self.connections: list[socket.socket] = []
        self.peers: list[tuple] = []  # each accepted connection's client address
        self.markers: set[tuple] = set()
        self._accepted = threading.Condition()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                accepted, peer = self.server.accept()
            except OSError:  # closed
                return
            with self._accepted:
                self.connections.append(accepted)
                self.peers.append(peer)
                self._accepted.notify_all()

    def clients(self) -> int:
        """The connections clients have opened so far, those not yet accepted included.

        A marker connection of its own joins the kernel's queue behind every earlier one;
        once the thread has accepted the marker, it has accepted them all.
        """
        with socket.create_connection(self.address) as marker:
            mark = marker.getsockname()
            self.markers.add(mark)
            with self._accepted:
                assert self._accepted.wait_for(lambda: mark in self.peers, timeout=60)
                return sum(1 for peer in self.peers if peer not in self.markers)

    def received(self) -> int:
        """The bytes sent to it so far, over all its connections: any command counts."""
        total = 0
        for accepted in list(self.connections):
            with contextlib.suppress(BlockingIOError):  # open, and nothing sent
                total += len(accepted.recv(1 << 20, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        return total

    def close(self) -> None:
        self.server.close()
        for accepted in self.connections:
            accepted.close()


@pytest.fixture
def hung_redis():
    hung = HungRedis()
    yield hung
    hung.close()


class FakeClock:
    """A clock that moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _breaker(cache: RedisCache) -> CircuitBreaker:
    """The breaker of ``cache``'s connection pool."""
    return cache._cache.get_client().connection_pool.breaker


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
    params = _hung_cache_settings(hung_redis.url, cooldown=COOLDOWN)
    cache = RedisCache(params["LOCATION"], params)
    clock = _breaker(cache).clock = FakeClock()
    began = time.monotonic()
    with pytest.raises(Exception) as raised:
        cache.get("k")
    assert not isinstance(raised.value, CacheSkipped)  # redis-py's timeout
    assert time.monotonic() - began >= TIMEOUT * 0.9
    asked = hung_redis.received()
    assert asked > 0
    # redis-py drops a connection that timed out, and the pool opens a new one for each
    # command; the breaker stops each command before anything is sent on it.
    for _ in range(50):
        with pytest.raises(CacheSkipped):
            cache.set("k", 1)
    assert hung_redis.received() == asked  # fifty commands, and not one waited a timeout
    assert len(_warnings(caplog)) == 1
    # After the cooldown Redis is asked again, and its failure opens the circuit again.
    clock.now += COOLDOWN
    began = time.monotonic()
    with pytest.raises(Exception) as raised:
        cache.get("k")
    assert not isinstance(raised.value, CacheSkipped)
    assert time.monotonic() - began >= TIMEOUT * 0.9
    assert hung_redis.received() > asked
    assert len(_warnings(caplog)) == 2


@pytest.mark.redis
def test_a_skipped_command_does_not_even_connect(hung_redis):
    """Behind an address that drops connection requests, a connect would wait its own
    timeout; so while the circuit is open the pool opens no connection at all."""
    params = _hung_cache_settings(hung_redis.url, cooldown=COOLDOWN)
    cache = RedisCache(params["LOCATION"], params)
    clock = _breaker(cache).clock = FakeClock()
    with pytest.raises(Exception) as raised:
        cache.get("k")
    assert not isinstance(raised.value, CacheSkipped)
    opened = hung_redis.clients()
    assert opened >= 1
    for _ in range(20):
        with pytest.raises(CacheSkipped):
            cache.set("k", 1)
        with pytest.raises(CacheSkipped):
            cache.get("k")
    assert hung_redis.clients() == opened
    # After the cooldown the pool connects again.
    clock.now += COOLDOWN
    with pytest.raises(Exception) as raised:
        cache.get("k")
    assert not isinstance(raised.value, CacheSkipped)
    assert hung_redis.clients() > opened


@pytest.mark.redis
@pytest.mark.django_db
def test_requests_with_limits_on_do_not_wait_for_a_hung_redis(api, hung_redis, settings):
    settings.STUDY_THROTTLE_RATES = {**settings.STUDY_THROTTLE_RATES, "user": "1000/minute"}
    hung = _hung_cache_settings(hung_redis.url, cooldown=COOLDOWN)
    with override_settings(CACHES={"default": hung}):
        _breaker(caches["default"]).clock = FakeClock()  # the cooldown never ends
        assert api.get("/api/v1/decks/").status_code == 200  # pays the timeout once
        asked = hung_redis.received()
        assert asked > 0
        statuses = [api.get("/api/v1/decks/").status_code for _ in range(10)]
        # Not one of the ten requests sent Redis a command, so none waited a timeout.
        assert hung_redis.received() == asked
    assert statuses == [200] * 10  # the limits fail open


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
