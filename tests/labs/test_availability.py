"""Whether lab code can be graded: a sandbox here, or a fresh report from the labs worker."""

from __future__ import annotations

import time

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from labs import availability, tasks

NOW = 1_800_000_000.0


@pytest.fixture(autouse=True)
def _clean_report():
    cache.delete(availability.REPORT_KEY)
    yield
    cache.delete(availability.REPORT_KEY)


@pytest.fixture
def no_local_sandbox(monkeypatch):
    monkeypatch.setattr(availability.sandbox, "unavailable", lambda: "bwrap: setting up uid map")


def test_a_sandbox_this_process_can_start_is_enough(monkeypatch):
    monkeypatch.setattr(availability.sandbox, "unavailable", lambda: None)
    cache.set(availability.REPORT_KEY, {"reason": "worker says no", "at": NOW})
    assert availability.sandbox_problem(now=NOW) is None


def test_without_a_local_sandbox_or_a_report_the_local_reason_is_given(no_local_sandbox):
    assert availability.sandbox_problem(now=NOW) == "bwrap: setting up uid map"


def test_a_fresh_report_from_the_labs_worker_lets_submissions_in(monkeypatch):
    monkeypatch.setattr(availability.sandbox, "unavailable", lambda: None)
    assert availability.report(now=NOW) is None  # on the labs worker
    monkeypatch.setattr(availability.sandbox, "unavailable", lambda: "bwrap: setting up uid map")
    assert availability.sandbox_problem(now=NOW + 60) is None  # in a web process
    # Older than the freshness window: a stopped worker no longer vouches.
    stale = NOW + availability.REPORT_FRESH_SECONDS + 1
    assert availability.sandbox_problem(now=stale) == "bwrap: setting up uid map"


def test_a_worker_that_cannot_start_one_either_gives_its_reason(no_local_sandbox, monkeypatch):
    cache.set(availability.REPORT_KEY, {"reason": "user namespaces are disabled", "at": NOW})
    assert availability.sandbox_problem(now=NOW) == "user namespaces are disabled"


@pytest.mark.parametrize("kept", ["junk", {"reason": None}, {"reason": None, "at": "soon"}])
def test_a_malformed_report_is_ignored(no_local_sandbox, kept):
    cache.set(availability.REPORT_KEY, kept)
    assert availability.sandbox_problem(now=NOW) == "bwrap: setting up uid map"


def test_the_beat_task_keeps_the_workers_answer(monkeypatch):
    monkeypatch.setattr(availability.sandbox, "unavailable", lambda: "no bwrap on this worker")
    assert tasks.report_sandbox() == "no bwrap on this worker"
    assert cache.get(availability.REPORT_KEY)["reason"] == "no bwrap on this worker"


@pytest.mark.django_db
def test_submissions_are_refused_then_let_in_by_the_workers_report(no_local_sandbox, make_user):
    client = APIClient()
    client.force_authenticate(make_user())
    refused = client.post("/api/v1/labs/softmax/submissions/", {"code": "x = 1"}, format="json")
    assert refused.status_code == 503
    assert "uid map" in refused.json()["detail"]
    cache.set(availability.REPORT_KEY, {"reason": None, "at": time.time()})
    accepted = client.post("/api/v1/labs/softmax/submissions/", {"code": "x = 1"}, format="json")
    assert accepted.status_code == 202, accepted.json()
