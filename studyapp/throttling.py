"""Rate limits per scope and the answer to a locked-out log-in.

Each scope's rate comes from ``STUDY_THROTTLE_<SCOPE>`` (settings.STUDY_THROTTLE_RATES,
``None`` when off). Counters live in the Django cache, so with Redis every worker
and container shares them. Anonymous scopes (sign-up, log-in, password reset)
count per client address; the others per learner.

The limit is DRF's sliding window: a request is let through while fewer than ``n``
were let through in the last ``duration`` seconds, and a refused one is not counted.
On Redis the window is a sorted set of those requests' times, pruned, counted and
added to by one script: one round trip a request instead of a read and a write of the
whole pickled history.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import secrets
import weakref
from typing import cast

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.core.cache import DEFAULT_CACHE_ALIAS, caches
from django.core.cache import cache as default_cache
from django.core.cache.backends.redis import RedisCache
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from rest_framework.throttling import SimpleRateThrottle

logger = logging.getLogger(__name__)

ANONYMOUS_SCOPES = frozenset({"register", "login", "password_reset"})


class StudyThrottle(SimpleRateThrottle):
    """DRF throttle whose scope a view names with ``throttle_scope``.

    A view may instead map HTTP methods to scopes with ``throttle_scopes``; an
    authenticated request to a view without a scope counts against ``user``.
    A cache that does not answer lets the request through (and is logged): the
    limits protect the service, they must not take it down.
    """

    cache_format = "throttle:%(scope)s:%(ident)s"
    # Set per request from the scope's rate (SimpleRateThrottle sets them in __init__).
    num_requests: int
    duration: int

    def __init__(self, scope: str | None = None):
        # SimpleRateThrottle reads the rate in __init__; here it is read per request,
        # so a changed setting (and a test) takes effect at once.
        self.scope = scope

    def _scope_for(self, request, view) -> str | None:
        if self.scope:
            return self.scope
        scopes = getattr(view, "throttle_scopes", None) or {}
        scope = scopes.get(request.method) or getattr(view, "throttle_scope", None)
        if scope:
            return scope
        user = getattr(request, "user", None)
        return "user" if user is not None and user.is_authenticated else None

    def get_rate(self):
        return settings.STUDY_THROTTLE_RATES.get(self.scope)

    def get_cache_key(self, request, view):
        if self.scope in ANONYMOUS_SCOPES:
            ident = client_address(request)
        else:
            user = getattr(request, "user", None)
            if user is None or not user.is_authenticated:
                ident = f"anon-{client_address(request)}"
            else:
                ident = user.pk
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def allow_request(self, request, view) -> bool:
        scope = self._scope_for(request, view)
        if scope is None:
            return True
        bound = StudyThrottle(scope)
        bound.rate = bound.get_rate()
        if bound.rate is None:
            return True
        # A rate that is set parses to two numbers.
        bound.num_requests, bound.duration = cast("tuple[int, int]", bound.parse_rate(bound.rate))
        try:
            redis = _redis_window(self.cache)
            if redis is None:
                allowed = SimpleRateThrottle.allow_request(bound, request, view)
            else:
                allowed = bound._allow_in_redis(redis, request, view)
        except Exception as exc:  # the cache is down or hung: serve, and say so in the log
            logger.warning("Rate limit %s not checked (%s: %s)", scope, type(exc).__name__, exc)
            return True
        self._bound = bound
        if not allowed:
            logger.info("Rate limit %s reached by %s", scope, bound.key)
        return allowed

    def _allow_in_redis(self, redis: _RedisWindow, request, view) -> bool:
        self.key = self.get_cache_key(request, view)
        self.now = self.timer()
        allowed, count, oldest = redis.script(
            # Its own key: a worker of an older release, reading DRF's pickled list under
            # ``self.key`` during a rolling deploy, never meets a sorted set.
            keys=[redis.cache.make_and_validate_key(f"{self.key}:window")],
            args=[repr(self.now), self.duration, self.num_requests, secrets.token_hex(8)],
            client=redis.client,
        )
        self._window = (int(count), float(oldest) if oldest is not None else None)
        return bool(allowed)

    def wait(self):
        bound = getattr(self, "_bound", None)
        if bound is not None and bound is not self:
            return bound.wait()
        window = getattr(self, "_window", None)
        if window is None:
            return SimpleRateThrottle.wait(self)
        # SimpleRateThrottle.wait over the window's count and oldest time.
        count, oldest = window
        remaining = self.duration - (self.now - oldest) if count else self.duration
        available = self.num_requests - count + 1
        return remaining / available if available > 0 else None


# KEYS[1] the window; ARGV now, duration (s), limit, a member unique to this request.
# Returns {allowed, requests in the window, oldest time in it (or nil)}.
_WINDOW_SCRIPT = """
local now, duration, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - duration)
local count = redis.call('ZCARD', KEYS[1])
local allowed = 0
if count < limit then
    redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
    redis.call('PEXPIRE', KEYS[1], math.ceil(duration * 1000))
    count = count + 1
    allowed = 1
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {allowed, count, oldest[2] or false}
"""


class _RedisWindow:
    def __init__(self, cache: RedisCache):
        self.cache = cache
        # The client behind Django's RedisCache, which the stubs do not declare.
        self.client = cache._cache.get_client(write=True)  # type: ignore[attr-defined]
        self.script = self.client.register_script(_WINDOW_SCRIPT)


_redis_windows: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _redis_window(cache) -> _RedisWindow | None:
    """The Redis client and script for the throttle's cache, or None when it is not Redis."""
    if cache is default_cache:
        cache = caches[DEFAULT_CACHE_ALIAS]
    if not isinstance(cache, RedisCache):
        return None
    window = _redis_windows.get(cache)
    if window is None:
        window = _redis_windows[cache] = _RedisWindow(cache)
    return window


def client_address(request) -> str:
    """The client's address: REMOTE_ADDR, or X-Forwarded-For behind trusted proxies."""
    meta = request.META
    proxies = settings.STUDY_TRUSTED_PROXIES
    forwarded = meta.get("HTTP_X_FORWARDED_FOR", "")
    if proxies and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            return hops[-min(proxies, len(hops))]
    return meta.get("REMOTE_ADDR", "") or "unknown"


def _retry_after_header(response: HttpResponse, seconds: float) -> HttpResponse:
    response["Retry-After"] = str(max(1, math.ceil(seconds)))
    return response


def _in_words(seconds: float) -> str:
    seconds = max(1, math.ceil(seconds))
    if seconds < 120:
        return f"{seconds} seconds"
    return f"{math.ceil(seconds / 60)} minutes"


# Server-rendered forms limited like their API counterparts: url name -> scope.
WEB_FORM_SCOPES = {
    "login": "login",
    "signup": "register",
    "password_reset": "password_reset",
    # It mails a link, to whatever address the learner has just typed in.
    "email-confirm-send": "password_reset",
    # The current password is checked there as a log-in is (and the profile's form when
    # it carries one, to change the e-mail address).
    "password-change": "login",
    "account-delete": "login",
    "admin:password_change": "login",
    # The exercise pages share the learner's budget with POST exercises/ and .../submit/.
    "exercise-index": "exercise_create",
    "exercise-page-submit": "exercise_submit",
    # The lab page's form shares the learner's budget with POST labs/{slug}/submissions/.
    "lab-page": "lab_submit",
}
# Forms whose POST counts only when it carries this field.
WEB_FORM_SCOPES_WITH_FIELD = {"profile": ("login", "password")}


def web_form_scope(request) -> str | None:
    """The limit a POST to a server-rendered page counts against, if any."""
    match = request.resolver_match
    name = match.view_name if match else ""
    scope = WEB_FORM_SCOPES.get(name)
    if scope is None and name in WEB_FORM_SCOPES_WITH_FIELD:
        scope, field = WEB_FORM_SCOPES_WITH_FIELD[name]
        if not request.POST.get(field):
            return None
    return scope


class WebFormThrottleMiddleware:
    """Limits the POSTs of the server-rendered forms that have an API counterpart
    (``WEB_FORM_SCOPES``), with the same scope and counter, and answers a 429 page."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.method != "POST" or request.path.startswith("/api/"):
            return None
        scope = web_form_scope(request)
        if scope is None:
            return None
        throttle = StudyThrottle(scope)
        if throttle.allow_request(request, None):
            return None
        wait = throttle.wait() or 1
        response = render(
            request,
            "registration/throttled.html",
            {"wait_words": _in_words(wait), "per_learner": scope not in ANONYMOUS_SCOPES},
            status=429,
        )
        return _retry_after_header(response, wait)


# --- Lockout (django-axes) ------------------------------------------------------------


class LockoutBackend(AxesStandaloneBackend):
    """Refuses any log-in, right password included, while the username is locked out.

    Only requests are checked: code that authenticates without one (a management
    command, a test's ``client.login``) is not a log-in from outside.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def lockout_seconds_left(username: str) -> float:
    """Seconds until ``username`` may log in again (the whole cool-off when unknown)."""
    from axes.helpers import get_cool_off
    from axes.models import AccessAttempt

    cool_off = get_cool_off() or dt.timedelta(minutes=15)
    last = (
        AccessAttempt.objects.filter(username=username)
        .order_by("-attempt_time")
        .values_list("attempt_time", flat=True)
        .first()
    )
    if last is None:
        return cool_off.total_seconds()
    return max(1.0, (last + cool_off - timezone.now()).total_seconds())


def lockout_response(request, original_response=None, credentials=None) -> HttpResponse:
    """429 for a locked-out username: when to try again, and the password reset as a way back.

    The same answer for a log-in and for any other check of the current password
    (changing the password or the e-mail address, deleting the account).
    """
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    seconds = lockout_seconds_left(username)
    until = timezone.now() + dt.timedelta(seconds=seconds)
    logger.warning("Password refused: username %r is locked out", username)
    response: HttpResponse
    if request.path.startswith("/api/"):
        response = JsonResponse(
            {
                "detail": (
                    "Too many failed log-ins or wrong passwords for this username: it is "
                    f"locked for {_in_words(seconds)} (until {until:%H:%M} UTC), even with "
                    "the right password. Reset the password (POST /api/v1/auth/password-reset/) "
                    "to get back in now."
                )
            },
            status=429,
        )
    else:
        response = render(
            request,
            "registration/locked_out.html",
            {"wait_words": _in_words(seconds), "until": until},
            status=429,
        )
    return _retry_after_header(response, seconds)
