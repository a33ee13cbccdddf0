"""Liveness (/healthz) and readiness (/readyz) for load balancers and compose health checks."""

from __future__ import annotations

import datetime as dt
import logging
import os
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache
from django.db import InterfaceError, OperationalError, connection
from django.db.models import Max, Min
from django.http import JsonResponse
from django.middleware.security import SecurityMiddleware
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from studyapp.common import db_breaker

logger = logging.getLogger(__name__)


def check_database() -> None:
    """SELECT 1; while the breaker is open, its state, without asking the database (a
    probe would wait the connect timeout), and a connection that fails here opens it."""
    breaker = db_breaker.default.breaker
    if breaker.is_open:
        raise RuntimeError(f"breaker open: the database was {breaker.describe()}")
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except (OperationalError, InterfaceError) as error:
        window = settings.STUDY_DB_BREAKER_SECONDS
        if window > 0 and db_breaker.is_connection_failure(error, connection):
            db_breaker.default.failed(error, window=window)
        raise


def check_cache() -> None:
    stamp = timezone.now().isoformat()
    cache.set("readyz:probe", stamp, timeout=30)
    if cache.get("readyz:probe") != stamp:
        raise RuntimeError("the cache did not keep a value")


def check_broker() -> None:
    if settings.REDIS_URL:
        import redis

        client = redis.Redis.from_url(
            settings.CELERY_BROKER_URL,
            socket_timeout=settings.REDIS_SOCKET_TIMEOUT,
            socket_connect_timeout=settings.REDIS_SOCKET_TIMEOUT,
        )
        try:
            client.ping()
        finally:
            client.close()
        return
    folder = str(settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("data_folder_in", ""))
    if not (os.path.isdir(folder) and os.access(folder, os.W_OK)):
        raise RuntimeError(f"the broker folder {folder} is missing or read-only")
    # A full disk: publishes fail (studyapp.broker_fs), so tasks are not sent.
    from .broker_fs import disk_problem

    full = disk_problem(folder, min_free_bytes=int(settings.STUDY_BROKER_MIN_FREE_MB * 2**20))
    if full is not None:
        raise RuntimeError(full)


def check_beat(*, now: dt.datetime | None = None) -> None:
    """Some periodic task ran within STUDY_BEAT_MAX_SILENCE_MINUTES.

    Before beat's first run the oldest enabled task's creation stands in for it,
    so a fresh install is ready as soon as beat has had one interval to start.
    """
    from django_celery_beat.models import PeriodicTask

    now = now or timezone.now()
    tasks = PeriodicTask.objects.filter(enabled=True).exclude(name__startswith="celery.")
    marks = tasks.aggregate(last=Max("last_run_at"), first=Min("date_changed"))
    last = marks["last"] or marks["first"]
    if last is None:
        raise RuntimeError("no periodic task is enabled")
    silence = dt.timedelta(minutes=settings.STUDY_BEAT_MAX_SILENCE_MINUTES)
    if now - last > silence:
        minutes = int((now - last).total_seconds() // 60)
        raise RuntimeError(f"beat has not run a task for {minutes} minutes")


def check_sandbox() -> str | None:
    """Why lab code cannot be graded (None when it can): a sandbox this process can start,
    or a labs worker whose heartbeat reported one lately (``labs.availability``)."""
    from labs.availability import sandbox_problem

    return sandbox_problem()


CHECKS: dict[str, Callable[[], None]] = {
    "database": check_database,
    "cache": check_cache,
    "broker": check_broker,
    "beat": check_beat,
}

# Reported but not required: without a sandbox only lab submissions are refused (503
# on that endpoint, with the reason), and everything else serves, so the status stays.
ADVISORY: dict[str, Callable[[], str | None]] = {
    "sandbox": check_sandbox,
}


@never_cache
@require_GET
def healthz(request):
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request):
    results = {}
    for name, check in CHECKS.items():
        if name == "beat" and results.get("database") != "ok":
            results[name] = "not checked: the database is not answering"
            continue
        try:
            check()
        except Exception as exc:
            logger.warning("Readiness check %s failed: %s: %s", name, type(exc).__name__, exc)
            results[name] = f"{type(exc).__name__}: {exc}"[:300]
        else:
            results[name] = "ok"
    ready = all(value == "ok" for value in results.values())
    for name, advise in ADVISORY.items():
        try:
            reason = advise()
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
        if reason is not None:
            logger.warning("Readiness: %s unavailable: %s", name, reason)
        results[name] = "ok" if reason is None else reason[:300]
    response = JsonResponse({"checks": results}, status=200 if ready else 503)
    if not ready:
        response["Retry-After"] = "10"
    return response


class HealthCheckMiddleware:
    """Answers /healthz and /readyz before host checks and the HTTPS redirect.

    Probes come from the container runtime or a load balancer over plain HTTP, with
    whatever Host header they use; the answers hold no data worth protecting. They still
    carry the headers every other answer does (``nosniff``, the referrer policy, HSTS to
    a request that came over HTTPS in production): Django's ``SecurityMiddleware``
    writes them here as it does further in.
    """

    def __init__(self, get_response):
        self.get_response = get_response
        self.security = SecurityMiddleware(get_response)

    def __call__(self, request):
        if request.method == "GET":
            if request.path_info == "/healthz":
                return self.security.process_response(request, healthz(request))
            if request.path_info == "/readyz":
                return self.security.process_response(request, readyz(request))
        return self.get_response(request)
