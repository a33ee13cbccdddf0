"""Whether lab code can be graded: a sandbox here, or a fresh report from a labs worker.

The labs worker reports on a heartbeat of its own (``availability.Heartbeat``); these tests
drive it by hand or with a short interval. ``tests/integration/test_labs_heartbeat.py``
runs it in a real worker.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from labs import availability, tasks

NOW = 1_800_000_000.0
HERE = "bubblewrap (bwrap) is not installed"


@pytest.fixture(autouse=True)
def _clean_report():
    keys = [availability.REPORT_KEY, availability.READY_KEY]
    cache.delete_many(keys)
    yield
    availability.stop_heartbeat()
    cache.delete_many(keys)


@pytest.fixture
def no_local_sandbox(monkeypatch):
    """The web container of the compose layout: no bwrap in this process."""
    monkeypatch.setattr(availability.sandbox, "unavailable", lambda: HERE)


def worker_says(monkeypatch, reason, *, at=NOW, worker="labs@a"):
    """A labs worker's report at ``at``, as its heartbeat writes it; the local check after."""
    monkeypatch.setattr(availability.sandbox, "unavailable", lambda: reason)
    assert availability.report(now=at, worker=worker) == reason
    monkeypatch.setattr(availability.sandbox, "unavailable", lambda: HERE)


def test_a_sandbox_this_process_can_start_is_enough(monkeypatch):
    monkeypatch.setattr(availability.sandbox, "unavailable", lambda: None)
    cache.set(availability.REPORT_KEY, {"reason": "worker says no", "at": NOW})
    assert availability.sandbox_problem(now=NOW) is None


def test_the_freshness_window_is_four_heartbeats(settings):
    settings.STUDY_LAB_HEARTBEAT_SECONDS = 15
    assert availability.heartbeat_seconds() == 15.0
    assert availability.fresh_seconds() == 60.0


def test_with_no_sandbox_here_and_no_worker_ever_heard_both_are_said(no_local_sandbox):
    assert availability.sandbox_problem(now=NOW) == (
        f"no labs worker has reported, and this process cannot start a sandbox: {HERE}"
    )


def test_a_fresh_report_from_a_labs_worker_lets_submissions_in(no_local_sandbox, monkeypatch):
    worker_says(monkeypatch, None)
    fresh = availability.fresh_seconds()
    assert availability.sandbox_problem(now=NOW + fresh) is None
    # Older than the freshness window: a stopped worker no longer vouches, and the
    # refusal says for how long no worker has reported.
    assert availability.sandbox_problem(now=NOW + fresh + 1) == (
        f"no labs worker has reported for {int(fresh) + 1} s, "
        f"and this process cannot start a sandbox: {HERE}"
    )


def test_a_worker_that_cannot_start_one_either_gives_its_own_reason(no_local_sandbox, monkeypatch):
    worker_says(monkeypatch, "bubblewrap (bwrap) is not installed")
    assert availability.sandbox_problem(now=NOW + 1) == (
        "bubblewrap (bwrap) is not installed on the labs worker"
    )


def test_one_worker_that_can_grade_is_enough_whatever_another_says(no_local_sandbox, monkeypatch):
    worker_says(monkeypatch, None, at=NOW, worker="labs@a")
    worker_says(monkeypatch, "user namespaces are disabled", at=NOW + 5, worker="labs@b")
    assert availability.sandbox_problem(now=NOW + 10) is None
    # Once labs@a is silent for longer than the window, labs@b's reason is the answer.
    later = NOW + availability.fresh_seconds() + 1
    assert availability.sandbox_problem(now=later) == (
        "user namespaces are disabled on the labs worker"
    )


@pytest.mark.parametrize(
    "kept", ["junk", {"reason": None}, {"reason": None, "at": "soon"}, ["at", NOW]]
)
def test_a_malformed_report_is_ignored(no_local_sandbox, kept):
    cache.set_many({availability.REPORT_KEY: kept, availability.READY_KEY: kept})
    assert availability.sandbox_problem(now=NOW).startswith("no labs worker has reported,")


def test_a_cache_that_does_not_answer_is_a_reason_not_an_error(no_local_sandbox, monkeypatch):
    def down(keys):
        raise ConnectionError("Connection refused")

    monkeypatch.setattr(availability.cache, "get_many", down)
    problem = availability.sandbox_problem(now=NOW)
    assert problem.startswith("the labs workers' reports cannot be read (ConnectionError")
    assert problem.endswith(HERE)


def test_the_beat_task_keeps_the_workers_answer(monkeypatch):
    monkeypatch.setattr(availability.sandbox, "unavailable", lambda: "no bwrap on this worker")
    assert tasks.report_sandbox() == "no bwrap on this worker"
    assert cache.get(availability.REPORT_KEY)["reason"] == "no bwrap on this worker"


def test_the_heartbeat_reports_at_start_then_on_its_own_until_stopped(monkeypatch):
    checks = []

    def check():
        checks.append(time.monotonic())
        return None

    monkeypatch.setattr(availability.sandbox, "unavailable", check)
    beat = availability.Heartbeat(worker="labs@test", interval=0.05)
    beat.start()
    assert checks, "the first report is made before start() returns"
    assert cache.get(availability.READY_KEY)["worker"] == "labs@test"
    deadline = time.monotonic() + 30
    while beat.beats < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert beat.beats >= 4
    beat.stop()
    assert not beat.alive
    stopped_at = beat.beats
    time.sleep(0.2)  # several intervals: a stopped heartbeat beats no more
    assert beat.beats == stopped_at


def test_a_beat_that_fails_does_not_end_the_heartbeat(monkeypatch):
    calls = []

    def flaky(**kwargs):
        calls.append(kwargs)
        if len(calls) == 2:
            raise RuntimeError("the cache client broke")
        return None

    monkeypatch.setattr(availability, "report", flaky)
    beat = availability.Heartbeat(worker="labs@test", interval=0.02)
    beat.start()
    deadline = time.monotonic() + 30
    while len(calls) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    beat.stop()
    assert len(calls) >= 4 and beat.beats >= 4


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_fork_waits_for_a_beat_in_progress(monkeypatch):
    # A pool process forked mid-beat would start with the sandbox check's lock held.
    entered, release = threading.Event(), threading.Event()

    def slow_check():
        entered.set()
        release.wait(30)
        return None

    beat = availability.Heartbeat(worker="labs@test", interval=3600)
    monkeypatch.setattr(availability.sandbox, "unavailable", lambda: None)
    beat.start()  # registers the fork guard; its first beat is done
    monkeypatch.setattr(availability.sandbox, "unavailable", slow_check)
    beating = threading.Thread(target=beat.beat)
    beating.start()
    assert entered.wait(30)
    forked_at = []

    def fork():
        pid = os.fork()
        if pid == 0:
            os._exit(0 if availability._beating.acquire(timeout=5) else 1)
        forked_at.append(beat.beats)
        _, status = os.waitpid(pid, 0)
        forked_at.append(os.waitstatus_to_exitcode(status))

    forking = threading.Thread(target=fork)
    forking.start()
    forking.join(0.3)
    assert forking.is_alive(), "the fork went ahead in the middle of a beat"
    release.set()
    forking.join(30)
    beating.join(30)
    beat.stop()
    assert forked_at == [2, 0]  # after the second beat; the child's lock was free


@pytest.mark.django_db
def test_the_worker_starts_one_heartbeat_for_the_labs_queue_only(monkeypatch):
    started = []
    monkeypatch.setattr(availability, "start_heartbeat", lambda worker: started.append(worker))

    class Consumer:
        def __init__(self, queues):
            self.hostname = "labs@box"
            self.app = type("App", (), {})()
            self.app.amqp = type("Amqp", (), {})()
            self.app.amqp.queues = type("Queues", (), {"consume_from": queues})()

    tasks._heartbeat_on_start(sender=Consumer({"celery": object()}))
    assert started == []
    tasks._heartbeat_on_start(sender=Consumer({"labs": object()}))
    assert started == ["labs@box"]


@pytest.mark.django_db
def test_submissions_are_refused_with_the_reason_then_let_in_by_the_heartbeat(
    no_local_sandbox, make_user, monkeypatch
):
    client = APIClient()
    client.force_authenticate(make_user())
    refused = client.post("/api/v1/labs/softmax/submissions/", {"code": "x = 1"}, format="json")
    assert refused.status_code == 503
    assert "no labs worker has reported" in refused.json()["detail"]
    monkeypatch.setattr(availability.sandbox, "unavailable", lambda: None)
    availability.start_heartbeat(worker="labs@box")  # the labs worker, which can grade
    monkeypatch.setattr(availability.sandbox, "unavailable", lambda: HERE)  # the web process
    accepted = client.post("/api/v1/labs/softmax/submissions/", {"code": "x = 1"}, format="json")
    assert accepted.status_code == 202, accepted.json()
