"""A Redis connection pool that stops asking a Redis that does not answer, for a while.

With Redis paused every command waits its socket timeout (``STUDY_REDIS_TIMEOUT``, 0.5 s)
before it fails; the rate limits then fail open, but each request has paid the timeout.
After a failure this pool's circuit is open for ``circuit_cooldown`` seconds: every
command fails at once with ``CacheSkipped`` (a redis ``ConnectionError``, so its callers
handle it as they handle Redis being down), and the rate limits fail open without
waiting. The first command after the cooldown tries Redis again: one that succeeds
closes the circuit, one that fails opens it for another cooldown. Each opening is
logged once, at WARNING, and the recovery at INFO.

The breaker sits in the connection, below Django's cache API, so every use of the pool
is covered: ``cache.get``/``set`` and the throttle's Lua script alike. Use it with
Django's ``RedisCache``: ``OPTIONS = {"pool_class": "studyapp.common.cache.CircuitBreakerPool",
"circuit_cooldown": 5}``. A small state machine of its own rather than a breaker
library's call wrapper: what it guards is redis-py's connection methods.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from redis import ConnectionPool
from redis.connection import Connection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

DEFAULT_COOLDOWN_SECONDS = 5.0


class CacheSkipped(RedisConnectionError):
    """Redis failed moments ago; this command was not sent."""


class CircuitBreaker:
    """Open for ``cooldown`` seconds after a failure; closed again by a success."""

    def __init__(self, *, name: str, cooldown: float, clock=time.monotonic):
        self.name = name
        self.cooldown = cooldown
        self.clock = clock
        self.open_until: float | None = None  # None: closed
        self.openings = 0
        self._lock = threading.Lock()

    def before(self) -> None:
        """Raise ``CacheSkipped`` while the circuit is open."""
        open_until = self.open_until
        if open_until is not None and self.clock() < open_until:
            raise CacheSkipped(
                f"Redis at {self.name} failed within the last {self.cooldown:g} s; not asked"
            )

    def failed(self, error: BaseException) -> None:
        with self._lock:
            now = self.clock()
            opening = self.open_until is None or now >= self.open_until
            self.open_until = now + self.cooldown
            if opening:
                self.openings += 1
        if opening:
            logger.warning(
                "Redis at %s failed (%s: %s); skipping it for %g s: rate limits are not "
                "checked meanwhile",
                self.name,
                type(error).__name__,
                error,
                self.cooldown,
            )

    def succeeded(self) -> None:
        if self.open_until is None:
            return
        with self._lock:
            was_open, self.open_until = self.open_until is not None, None
        if was_open:
            logger.info("Redis at %s answers again; rate limits are checked again", self.name)


_FAILURES = (RedisConnectionError, RedisTimeoutError, OSError)


class _BreakerConnection:
    """Mixed into a redis-py connection class: every connect and every command passes the
    breaker."""

    _breaker: CircuitBreaker

    def __init__(self, *args: Any, breaker: CircuitBreaker, **kwargs: Any):
        self._breaker = breaker
        super().__init__(*args, **kwargs)

    def connect_check_health(self, *args: Any, **kwargs: Any) -> None:
        """The pool connects before it sends: an open circuit stops the connect too, which
        against an address that drops connection requests would wait its own timeout."""
        if getattr(self, "_sock", None) is None:
            self._breaker.before()
        try:
            super().connect_check_health(*args, **kwargs)  # type: ignore[misc]
        except CacheSkipped:
            raise
        except _FAILURES as error:
            self._breaker.failed(error)
            raise

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        self._breaker.before()
        try:
            super().send_packed_command(command, check_health)  # type: ignore[misc]
        except CacheSkipped:
            raise
        except _FAILURES as error:
            self._breaker.failed(error)
            raise

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            response = super().read_response(*args, **kwargs)  # type: ignore[misc]
        except _FAILURES as error:
            self._breaker.failed(error)
            raise
        self._breaker.succeeded()
        return response


_breaker_classes: dict[type, type] = {}


def _with_breaker(connection_class: type) -> type:
    if connection_class not in _breaker_classes:
        _breaker_classes[connection_class] = type(
            f"Breaker{connection_class.__name__}", (_BreakerConnection, connection_class), {}
        )
    return _breaker_classes[connection_class]


class CircuitBreakerPool(ConnectionPool):
    """redis-py's pool, whose connections share one ``CircuitBreaker``."""

    def __init__(
        self,
        connection_class: type = Connection,
        *,
        circuit_cooldown: float = DEFAULT_COOLDOWN_SECONDS,
        **kwargs: Any,
    ):
        name = f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"
        self.breaker = CircuitBreaker(name=name, cooldown=float(circuit_cooldown))
        super().__init__(
            connection_class=_with_breaker(connection_class), breaker=self.breaker, **kwargs
        )
