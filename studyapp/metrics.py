"""``/metrics`` for Prometheus and the middleware that times every request by view."""

from __future__ import annotations

import hmac
import os
import time

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client import REGISTRY as DEFAULT_REGISTRY

from cards.metrics import REQUEST_LATENCY


class RequestLatencyMiddleware:
    """Observe each request's duration under its URL pattern's name (never the raw path)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        view = (match.view_name or match._func_path) if match else "unmatched"
        REQUEST_LATENCY.labels(view, request.method, str(response.status_code)).observe(
            time.perf_counter() - started
        )
        return response


def _registry():
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return DEFAULT_REGISTRY


def _allowed(request) -> bool:
    token = settings.STUDY_METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    if token and hmac.compare_digest(header.encode(), f"Bearer {token}".encode()):
        return True
    user = getattr(request, "user", None)
    return bool(user and user.is_authenticated and user.is_staff)


def metrics(request):
    """Prometheus text format, for staff or ``Authorization: Bearer $STUDY_METRICS_TOKEN``."""
    if not _allowed(request):
        return JsonResponse(
            {"detail": "Metrics are for staff or a bearer token (STUDY_METRICS_TOKEN)."},
            status=403,
        )
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)
