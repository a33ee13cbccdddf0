"""Fault paths: a hung Redis, dead idempotency claims, hostile bodies, a database outage, health."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from django.db import OperationalError
from django.utils import timezone

from cards.models import Card, Deck, IdempotencyKey, ReviewLog, ReviewState
from cards.services import reviews as review_services
from studyapp import health, middleware
from tests.pausing import paused

ROOT = Path(__file__).resolve().parent.parent


# --- A hung Redis -------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def own_redis():
    """A redis-server of this test's own, on a spare port."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    port = _free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import redis

    client = redis.Redis(port=port, socket_timeout=1)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    try:
        yield process, f"redis://127.0.0.1:{port}/0"
    finally:
        process.send_signal(signal.SIGCONT)
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.django_db
def test_a_paused_redis_does_not_hold_a_card_write(
    own_redis, settings, staff_api, django_capture_on_commit_callbacks
):
    from studyapp.celery import app as celery_app

    process, url = own_redis
    timeout = settings.REDIS_SOCKET_TIMEOUT
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "OPTIONS": {"socket_timeout": timeout, "socket_connect_timeout": timeout},
        }
    }
    settings.STUDY_THROTTLE_RATES = {**settings.STUDY_THROTTLE_RATES, "user": "1000/minute"}
    saved = (celery_app.conf.broker_url, celery_app.conf.broker_transport_options)
    celery_app.conf.broker_url = url
    celery_app.conf.broker_transport_options = {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "max_retries": 0,
    }
    celery_app._pool = None
    celery_app.amqp._producer_pool = None
    Deck.objects.create(slug="attention", title="Attention")
    body = {"deck": "attention", "kind": "recall", "prompt": "P", "answer": "A"}
    try:
        # Connections are open and warm when Redis stops answering.
        with django_capture_on_commit_callbacks(execute=True):
            assert staff_api.post("/api/v1/cards/", body, format="json").status_code == 201
        # Without its timeouts the write would wait for Redis: a failure guard, 60 s on.
        with paused(process, guard=60) as pause:
            with django_capture_on_commit_callbacks(execute=True):
                response = staff_api.post("/api/v1/cards/", {**body, "prompt": "Q"}, format="json")
            answered_paused = pause.held()
    finally:
        celery_app.conf.broker_url, celery_app.conf.broker_transport_options = saved
        celery_app._pool = None
        celery_app.amqp._producer_pool = None
    assert answered_paused, "the card write waited for Redis to resume"
    assert response.status_code == 201, response.content
    assert Card.objects.filter(prompt="Q").exists()


def test_production_settings_put_timeouts_on_broker_and_cache():
    script = (
        "import django; django.setup(); from django.conf import settings as s; "
        "import json; print(json.dumps([s.CELERY_BROKER_TRANSPORT_OPTIONS, "
        "s.CACHES['default']['OPTIONS'], s.CACHES['default']['BACKEND']]))"
    )
    env = {
        **os.environ,
        "REDIS_URL": "redis://127.0.0.1:6399/0",
        "DJANGO_SETTINGS_MODULE": "studyapp.settings",
    }
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    broker, cache_options, backend = json.loads(done.stdout.strip().splitlines()[-1])
    assert backend == "django.core.cache.backends.redis.RedisCache"
    for options in (broker, cache_options):
        assert 0 < options["socket_timeout"] <= 1 and 0 < options["socket_connect_timeout"] <= 1


def test_without_redis_the_cache_is_local():
    script = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.CACHES['default']['BACKEND'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["DJANGO_SETTINGS_MODULE"] = "studyapp.settings"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.stdout.strip().endswith("LocMemCache"), done.stderr


# --- Idempotency-Key lease -----------------------------------------------------------


@pytest.fixture
def due_card(learner):
    from cards.models import Enrollment

    deck = Deck.objects.create(slug="attention", title="Attention")
    card = Card.objects.create(deck=deck, kind="recall", prompt="P", answer="A")
    Enrollment.objects.create(learner=learner, deck=deck)
    ReviewState.objects.create(learner=learner, card=card, step=0, due_on=dt.date(2020, 1, 1))
    return card


def _stale_claim(learner, card, key: str, *, age: dt.timedelta) -> IdempotencyKey:
    fingerprint = review_services.request_fingerprint(
        method="POST", path="/api/v1/reviews/", body={"card": card.pk, "result": "pass"}
    )
    claim = IdempotencyKey.objects.create(learner=learner, key=key, request_hash=fingerprint)
    IdempotencyKey.objects.filter(pk=claim.pk).update(created_at=timezone.now() - age)
    return claim


def _post_review(api, card, key):
    return api.post(
        "/api/v1/reviews/",
        {"card": card.pk, "result": "pass"},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


@pytest.mark.django_db
def test_a_claim_in_flight_within_its_lease_is_409(api, learner, due_card):
    _stale_claim(learner, due_card, "k1", age=dt.timedelta(seconds=10))
    assert _post_review(api, due_card, "k1").status_code == 409
    assert not ReviewLog.objects.exists()


@pytest.mark.django_db
def test_a_dead_claim_is_taken_over_after_its_lease(api, learner, due_card):
    _stale_claim(learner, due_card, "k2", age=dt.timedelta(seconds=61))
    response = _post_review(api, due_card, "k2")
    assert response.status_code == 201, response.content
    assert ReviewLog.objects.count() == 1
    # And the key now replays that answer.
    again = _post_review(api, due_card, "k2")
    assert again.status_code == 201 and again.json() == response.json()
    assert ReviewLog.objects.count() == 1


@pytest.mark.django_db
def test_a_dead_claim_whose_review_was_recorded_answers_that_review_once(api, learner, due_card):
    # The first request recorded its review, then died before storing its answer.
    first = review_services.review_record(
        learner=learner, card=due_card, result="pass", at=timezone.now(), idempotency_key="k3"
    )
    _stale_claim(learner, due_card, "k3", age=dt.timedelta(minutes=5))
    response = _post_review(api, due_card, "k3")
    assert response.status_code == 201
    assert response.json()["id"] == first.pk
    assert ReviewLog.objects.count() == 1
    assert ReviewState.objects.get(card=due_card).step == 1


@pytest.mark.django_db
def test_two_retries_of_a_dead_claim_take_it_once(learner, due_card):
    claim = _stale_claim(learner, due_card, "k4", age=dt.timedelta(minutes=2))
    now = timezone.now()
    taken = review_services.idempotency_begin(
        learner=learner, key="k4", fingerprint=claim.request_hash, at=now
    )
    assert getattr(taken, "taken_over", False)
    with pytest.raises(review_services.IdempotencyConflict):
        review_services.idempotency_begin(
            learner=learner, key="k4", fingerprint=claim.request_hash, at=now
        )


# --- Hostile bodies -----------------------------------------------------------------

# 2,000 levels in 4,000 bytes: within the log-in paths' body bound, far past the depth's.
DEEP = b"[" * 2_000 + b"]" * 2_000


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "authenticated"),
    [
        ("/api/v1/auth/register/", False),
        ("/api/v1/auth/token/", False),
        ("/api/v1/auth/password-reset/", False),
        ("/api/v1/reviews/", True),
        ("/api/v1/exercises/", True),
        ("/api/v1/exercises/1/submit/", True),
        ("/api/v1/attention/", True),
        ("/api/v1/me/", True),
    ],
)
def test_deep_json_is_400_everywhere(api, anon_api, path, authenticated):
    client = api if authenticated else anon_api
    method = client.patch if path == "/api/v1/me/" else client.post
    response = method(path, DEEP, content_type="application/json")
    assert response.status_code == 400
    assert "nest" in response.json()["detail"]


@pytest.mark.django_db
def test_the_depth_limit_is_32_levels(api):
    ok = b'{"Q": ' + b"[" * 31 + b"1" + b"]" * 31 + b"}"
    deep = b'{"Q": ' + b"[" * 32 + b"1" + b"]" * 32 + b"}"
    assert "nest" not in str(
        api.post("/api/v1/attention/", ok, content_type="application/json").content
    )
    refused = api.post("/api/v1/attention/", deep, content_type="application/json")
    assert refused.status_code == 400 and "33 levels" in refused.json()["detail"]


def test_json_depth_ignores_brackets_inside_strings():
    assert middleware.json_depth(b'{"a": "[[[[[[", "b": [[1]]}') == 3
    assert middleware.json_depth(b'["\\"[[[", 1]') == 1
    assert middleware.json_depth(b"12") == 0


def _largest_playground_request(n: int = 256) -> bytes:
    """X and three W's of n x n at float64's full precision, and a boolean mask."""
    rng = np.random.default_rng(0)
    body = {name: (rng.standard_normal((n, n)) / 7).tolist() for name in ("X", "W_Q", "W_K", "W_V")}
    body["mask"] = np.triu(np.ones((n, n), dtype=bool), k=1).tolist()
    return json.dumps(body).encode()


@pytest.mark.django_db
def test_the_largest_contract_request_fits_and_a_larger_body_is_413(api, settings):
    body = _largest_playground_request()
    assert 6_000_000 < len(body) < settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    response = api.post("/api/v1/attention/", body, content_type="application/json")
    assert response.status_code == 200, response.content[:300]
    assert response.json()["shapes"]["weights"] == [256, 256]
    too_big = b'{"Q": [' + b"1," * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 2) + b"1]}"
    refused = api.post("/api/v1/attention/", too_big, content_type="application/json")
    assert refused.status_code == 413
    assert "at most" in refused.json()["detail"]


@pytest.mark.django_db
def test_error_answers_are_bounded(api, settings):
    created = api.post("/api/v1/exercises/", {"kind": "attention"}, format="json").json()
    # A hundred unknown part names of 40,000 characters each: every error repeats its name.
    answers = {f"{i:03d}" + "x" * 40_000: 1 for i in range(100)}
    response = api.post(
        f"/api/v1/exercises/{created['id']}/submit/", {"answers": answers}, format="json"
    )
    assert response.status_code == 400
    assert len(response.content) <= settings.STUDY_MAX_ERROR_BYTES
    body = response.json()
    assert isinstance(body["detail"], str) and "cut" in body["detail"]
    first = next(iter(body["answers"]))  # the first part is named, its name cut short
    assert first.startswith("000xxx") and len(first) <= 501


@pytest.mark.django_db
def test_a_submission_of_more_parts_than_any_exercise_asks_is_refused_unread(api):
    created = api.post("/api/v1/exercises/", {"kind": "attention"}, format="json").json()
    # As many parts as the JSON guard's element count lets through (tests/test_cost_bounds.py
    # refuses more before they are parsed).
    answers = {f"part{i}": 1 for i in range(5_000)}
    response = api.post(
        f"/api/v1/exercises/{created['id']}/submit/", {"answers": answers}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {"answers": ["Expected at most 100 parts, got 5000."]}
    after = api.get(f"/api/v1/exercises/{created['id']}/").json()
    assert after["attempts"] == created["attempts"] and after["attempts"]["used"] == 0


def test_an_error_whose_first_fields_are_still_too_long_leaves_only_the_note():
    deep = {"a": [[["x" * 400] * 10] * 10] * 10}
    content = json.dumps(deep).encode()
    assert len(middleware.bounded_error(content)) > 64 * 1024
    shorter = json.loads(middleware.bounded_error(content, limit=64 * 1024))
    assert list(shorter) == ["detail"] and "too long" in shorter["detail"]


def test_bounded_error_keeps_the_first_fields_and_says_how_many_are_hidden():
    big = {f"f{i}": ["x" * 1000] * 50 for i in range(100)}
    shorter = json.loads(middleware.bounded_error(json.dumps(big).encode()))
    assert len(shorter) == 21 and all(len(v) == 10 for k, v in shorter.items() if k != "detail")
    assert "80 more fields" in shorter["detail"]


@pytest.mark.django_db
def test_the_playground_computes_a_bounded_number_of_requests_at_once(api, settings):
    settings.STUDY_PLAYGROUND_WAIT_SECONDS = 0.1
    slots = middleware._slots()
    taken = 0
    while slots.acquire(blocking=False):
        taken += 1
    assert taken == settings.STUDY_PLAYGROUND_CONCURRENCY
    try:
        head = {"Q": [[1, 0]], "K": [[1, 0]], "V": [[1, 2]]}
        busy = api.post("/api/v1/attention/", head, format="json")
    finally:
        for _ in range(taken):
            slots.release()
    assert busy.status_code == 503 and int(busy["Retry-After"]) > 0
    assert api.post("/api/v1/attention/", head, format="json").status_code == 200


def test_playground_requests_in_parallel_wait_for_a_slot(settings):
    # A slot held by one thread is handed to the next one when released.
    slots = middleware._slots()
    order = []

    def hold():
        with slots:
            order.append("start")
            time.sleep(0.2)
            order.append("end")

    threads = [
        threading.Thread(target=hold) for _ in range(settings.STUDY_PLAYGROUND_CONCURRENCY + 1)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    running = max(
        order[: i + 1].count("start") - order[: i + 1].count("end") for i in range(len(order))
    )
    assert running == settings.STUDY_PLAYGROUND_CONCURRENCY


# --- Database outage ----------------------------------------------------------------


@pytest.mark.django_db
def test_a_database_error_mid_request_is_503_with_retry_after(api, monkeypatch):
    from cards import stats

    def gone(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(stats, "learner_stats", gone)
    response = api.get("/api/v1/stats/")
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert isinstance(response.json()["detail"], str)


def test_a_stopped_database_answers_503_and_readyz_says_why():
    script = """
import json, django
django.setup()
from django.test import Client
c = Client()
out = {}
r = c.get("/api/v1/me/", HTTP_AUTHORIZATION="Token abc")
out["api"] = [r.status_code, r.get("Retry-After"), r.json()]
r = c.post("/api/v1/auth/token/", '{"username": "a", "password": "b"}', content_type="application/json")
out["login"] = [r.status_code, r.get("Retry-After")]
r = c.get("/healthz")
out["healthz"] = [r.status_code, r.json()]
r = c.get("/readyz")
out["readyz"] = [r.status_code, r.json()]
print(json.dumps(out))
"""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(
        {
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:{_free_port()}/gone",
            "DJANGO_SETTINGS_MODULE": "studyapp.settings",
            "DJANGO_DEBUG": "1",
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert (
        out["api"][0] == 503 and int(out["api"][1]) > 0 and isinstance(out["api"][2]["detail"], str)
    )
    assert out["login"][0] == 503
    assert out["healthz"] == [200, {"status": "ok"}]
    assert out["readyz"][0] == 503
    checks = out["readyz"][1]["checks"]
    assert checks["database"] != "ok" and checks["cache"] == "ok"


# --- Health ------------------------------------------------------------------------


@pytest.mark.django_db
def test_healthz_and_readyz(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.content
    checks = ready.json()["checks"]
    # "sandbox" is reported but not required (tests/studyapp/test_health_sandbox.py).
    assert set(checks) == {"database", "cache", "broker", "beat", "sandbox"}
    assert {checks[name] for name in ("database", "cache", "broker", "beat")} == {"ok"}


@pytest.mark.django_db
def test_readyz_is_503_when_beat_is_silent_or_a_service_fails(client, monkeypatch):
    from django_celery_beat.models import PeriodicTask

    long_ago = timezone.now() - dt.timedelta(hours=2)
    PeriodicTask.objects.update(last_run_at=long_ago, date_changed=long_ago)
    stale = client.get("/readyz")
    assert stale.status_code == 503 and int(stale["Retry-After"]) > 0
    assert "beat has not run a task for 120 minutes" in stale.json()["checks"]["beat"]

    PeriodicTask.objects.update(last_run_at=timezone.now())
    assert client.get("/readyz").status_code == 200

    def down():
        raise ConnectionError("Connection refused")

    monkeypatch.setitem(health.CHECKS, "cache", down)
    failed = client.get("/readyz")
    assert failed.status_code == 503
    assert failed.json()["checks"]["cache"] == "ConnectionError: Connection refused"
