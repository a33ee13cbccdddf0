"""Budgets counted in cost rather than in requests, and one request at a time per key.

``CostBudget`` is a token bucket per key: ``capacity`` units, refilled evenly over
``period`` seconds; a request is let through while the bucket holds its cost, and a
refused one takes nothing. On Redis the bucket is one hash, read and written by one
script (so every process and container shares it); on any other cache a read and a
write, which is right for the single process such a cache serves.

``one_at_a_time`` holds a key in the cache while a request runs (``cache.add``, with a
timeout that outlives any request), so a second request with the same key is refused
instead of running beside it; ``one_of`` holds one of a few such keys (slots shared by
every process that shares the cache).

A cache that does not answer lets the request through, and is logged: the limits
protect the service, they must not take it down.
"""

from __future__ import annotations

import contextlib
import logging
import math
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass

from django.core.cache import DEFAULT_CACHE_ALIAS, caches
from django.core.cache.backends.redis import RedisCache

logger = logging.getLogger(__name__)

PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# Longer than any request may run (gunicorn's 30 s timeout): a key a killed worker left
# behind frees itself.
HOLD_SECONDS = 60

# KEYS[1] the bucket; ARGV capacity, period (s), cost, now (s).
# Returns {allowed, units left after this request (or before a refused one)}.
_BUCKET_SCRIPT = """
local capacity, period = tonumber(ARGV[1]), tonumber(ARGV[2])
local cost, now = tonumber(ARGV[3]), tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 'units', 'at')
local units = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
units = math.min(capacity, units + math.max(0, now - at) * capacity / period)
local allowed = 0
if units >= cost then
    units = units - cost
    allowed = 1
end
redis.call('HSET', KEYS[1], 'units', tostring(units), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(period * 1000))
return {allowed, tostring(units)}
"""


def parse_rate(rate: str) -> tuple[int, int]:
    """``"2000000/minute"`` -> (2000000, 60)."""
    count, _, period = rate.partition("/")
    return int(count), PERIODS[period[:1]]


@dataclass(frozen=True)
class CostBudget:
    name: str
    capacity: int
    period: int

    @classmethod
    def from_rate(cls, name: str, rate: str | None) -> CostBudget | None:
        if rate is None:
            return None
        capacity, period = parse_rate(rate)
        return cls(name, capacity, period)

    def wait(self, units_left: float, cost: int) -> float:
        """Seconds until the bucket holds ``cost`` (at most the whole period)."""
        missing = min(cost, self.capacity) - units_left
        return max(1.0, missing * self.period / self.capacity)

    def charge(self, ident: object, cost: int) -> float | None:
        """Take ``cost`` units from ``ident``'s bucket: None when let through, else the
        seconds to wait. A cost above the whole capacity waits for a full bucket and
        then takes all of it."""
        cost = max(0, min(cost, self.capacity))
        cache = caches[DEFAULT_CACHE_ALIAS]
        key = f"budget:{self.name}:{ident}"
        now = time.time()
        try:
            if isinstance(cache, RedisCache):
                allowed, left = _redis_charge(cache, key, self, cost, now)
            else:
                allowed, left = _local_charge(cache, key, self, cost, now)
        except Exception as exc:  # the cache is down or hung: serve, and say so
            logger.warning("Budget %s not checked (%s: %s)", self.name, type(exc).__name__, exc)
            return None
        if allowed:
            return None
        logger.info("Budget %s spent by %s", self.name, ident)
        return self.wait(left, cost)


def _redis_charge(cache: RedisCache, key: str, budget: CostBudget, cost: int, now: float):
    client = cache._cache.get_client(write=True)  # type: ignore[attr-defined]
    allowed, left = client.eval(
        _BUCKET_SCRIPT,
        1,
        cache.make_and_validate_key(key),
        budget.capacity,
        budget.period,
        cost,
        repr(now),
    )
    return bool(allowed), float(left)


def _local_charge(cache, key: str, budget: CostBudget, cost: int, now: float):
    units, at = cache.get(key) or (budget.capacity, now)
    units = min(budget.capacity, units + max(0.0, now - at) * budget.capacity / budget.period)
    allowed = units >= cost
    if allowed:
        units -= cost
    cache.set(key, (units, now), timeout=budget.period)
    return allowed, units


@contextlib.contextmanager
def one_at_a_time(key: str) -> Iterator[bool]:
    """Whether this request holds ``key`` (False: another one does); released after."""
    cache = caches[DEFAULT_CACHE_ALIAS]
    token = secrets.token_hex(8)
    try:
        held = cache.add(key, token, timeout=HOLD_SECONDS)
    except Exception as exc:
        logger.warning("Turn %s not checked (%s: %s)", key, type(exc).__name__, exc)
        yield True
        return
    try:
        yield bool(held)
    finally:
        if held:
            with contextlib.suppress(Exception):
                # Only this request's own hold (one left by a killed worker has expired).
                if cache.get(key) == token:
                    cache.delete(key)


@contextlib.contextmanager
def one_of(key: str, slots: int) -> Iterator[bool]:
    """Whether this request holds one of ``slots`` slots named ``key`` (False: every one
    is held), released after: ``one_at_a_time`` over ``key:0`` ... ``key:<slots - 1>``."""
    for slot in range(max(1, slots)):
        with one_at_a_time(f"{key}:{slot}") as held:
            if held:
                yield True
                return
    yield False


def retry_after(seconds: float) -> int:
    return max(1, math.ceil(seconds))
