"""The labs worker's own heartbeat, with beat off, in the compose layout.

This process plays the web container: it cannot start a sandbox (no bwrap there). A real
labs worker (``-Q labs``) reports on its heartbeat: while it runs, submissions are
accepted and it grades them; once it is killed, they are refused with "no labs worker
has reported for N s"; a labs worker without bubblewrap gets them refused with its own
reason. Beat never runs.

The worker uses a Redis database of its own (the first empty one from 8 to 15, flushed
afterwards) for its broker and cache, so its reports and its ``labs`` queue never meet
those of other tests or of a ``make run`` on the shared Redis.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
from django.core.cache import cache

from labs import availability, services
from labs.catalogue import LABS
from labs.models import Submission
from labs.publishing import GRADE_SUBMISSION_TASK
from studyapp.celery import app
from tests.labs import require_sandbox

from .conftest import wait_for

pytestmark = [
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.sandbox,
    pytest.mark.django_db(transaction=True),
]

LAB = "causal-mask"
HERE = "bubblewrap (bwrap) is not installed"
HEARTBEAT = "1"  # seconds; a report counts for four of them


def _redis_db(url: str, db: int) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{db}"))


@pytest.fixture
def own_redis():
    """The URL of an empty Redis database, flushed after the test."""
    base = os.environ["REDIS_URL"]
    for db in range(8, 16):
        client = redis.Redis.from_url(_redis_db(base, db))
        if client.dbsize() == 0:
            try:
                yield _redis_db(base, db)
            finally:
                client.flushdb()
                client.close()
            return
        client.close()
    pytest.skip("no empty Redis database among 8-15 for the labs worker")


@pytest.fixture
def web(own_redis, settings, monkeypatch):
    """This process as the web container: the worker's cache, no sandbox of its own, and
    gradings published to the worker's broker."""
    require_sandbox()  # the labs worker's, on this machine
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": own_redis,
            "KEY_PREFIX": "study",
        }
    }
    settings.STUDY_LAB_HEARTBEAT_SECONDS = float(HEARTBEAT)
    monkeypatch.setattr(availability.sandbox, "unavailable", lambda: HERE)

    def publish(pk: int) -> bool:
        with app.connection_for_write(own_redis) as connection:
            app.send_task(GRADE_SUBMISSION_TASK, args=[pk], connection=connection)
        return True

    monkeypatch.setattr(services, "publish_grading", publish)
    return own_redis


def labs_worker(celery_procs, redis_url: str, **env: str):
    celery_procs.queue = "labs"  # a labs worker: the queue the heartbeat starts for
    celery_procs.redis_url = redis_url
    return celery_procs.worker(
        concurrency=1, STUDY_LAB_HEARTBEAT_SECONDS=HEARTBEAT, STUDY_LAB_WALL_SECONDS="5", **env
    )


def submit(api, code: str = "x = 1"):
    return api.post(f"/api/v1/labs/{LAB}/submissions/", {"code": code}, format="json")


def refused_for(api, words: str) -> dict:
    before = Submission.objects.count()
    response = submit(api)
    assert response.status_code == 503, response.content
    assert int(response["Retry-After"]) > 0
    detail = response.json()["detail"]
    assert words in detail, detail
    assert Submission.objects.count() == before  # nothing saved, nothing queued
    return response.json()


def test_the_labs_worker_reports_on_its_own_heartbeat_with_beat_off(web, celery_procs, api):
    refused_for(api, "no labs worker has reported, and this process cannot start a sandbox")

    worker = labs_worker(celery_procs, web)
    wait_for(
        lambda: availability.sandbox_problem() is None,
        timeout=60,
        what="the labs worker's first report",
        procs=[worker],
    )
    accepted = submit(api, LABS[LAB].reference)
    assert accepted.status_code == 202, accepted.content
    pk = accepted.json()["id"]
    wait_for(
        lambda: Submission.objects.filter(pk=pk, status="done", passed=True).exists(),
        timeout=60,
        what="the submission graded by the labs worker",
        procs=[worker],
    )
    # Still let in after the first report would have gone stale: the worker keeps
    # reporting by itself, and no moment in between refuses a submission.
    first = cache.get(availability.READY_KEY)["at"]

    def reported_again_past_the_first_window() -> bool:
        assert availability.sandbox_problem() is None
        return cache.get(availability.READY_KEY)["at"] > first + availability.fresh_seconds()

    wait_for(
        reported_again_past_the_first_window,
        timeout=60,
        what="a report newer than the first one's freshness",
        procs=[worker],
    )

    celery_procs.kill(worker)
    wait_for(
        lambda: "reported for" in (availability.sandbox_problem() or ""),
        timeout=60,
        what="the killed worker's report to go stale",
    )
    assert availability.sandbox_problem().startswith("no labs worker has reported for ")
    refused_for(api, "no labs worker has reported for ")


def test_a_labs_worker_without_bubblewrap_is_named_as_the_reason(web, celery_procs, api):
    # PATH holds the virtualenv only: the worker runs, and finds no bwrap.
    worker = labs_worker(celery_procs, web, PATH=str(Path(sys.executable).parent))
    wait_for(
        lambda: availability.sandbox_problem() == f"{HERE} on the labs worker",
        timeout=60,
        what="the worker's report that it has no bubblewrap",
        procs=[worker],
    )
    body = refused_for(api, f"{HERE} on the labs worker")
    assert "this process" not in body["detail"]
    assert worker.poll() is None
