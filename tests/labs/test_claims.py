"""A grading claimed under a lease, taken over once, swept again; one submission in flight.

The sandbox is ``tiny_lab.FakeSandbox`` (it runs nothing). Times are fixed with
``time_machine`` where the lease or the sweep's minute matters.
"""

from __future__ import annotations

import datetime as dt
import logging

import pytest
import time_machine
from django.db import IntegrityError, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError

from labs import services, tasks
from labs.models import Submission

from .tiny_lab import FakeSandbox, install

pytestmark = pytest.mark.django_db

CODE = "def double(x):\n    return 2 * x\n"
T0 = dt.datetime(2026, 3, 3, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def sandbox(monkeypatch) -> FakeSandbox:
    return install(monkeypatch)


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """What was sent to the broker (nothing runs): the submission ids, in order."""
    ids: list[int] = []
    monkeypatch.setattr(tasks.grade_submission, "delay", ids.append)
    return ids


def lease() -> dt.timedelta:
    return dt.timedelta(seconds=services.lease_seconds())


def queued(learner, at=T0, **fields) -> Submission:
    with time_machine.travel(at, tick=False):
        return Submission.objects.create(
            learner=learner, lab="tiny", code=CODE, seed=1, published_at=at, **fields
        )


def running(learner, *, claimed_at=T0, attempts=1) -> Submission:
    submission = queued(learner, at=claimed_at - dt.timedelta(seconds=1))
    Submission.objects.filter(pk=submission.pk).update(
        status="running", started_at=claimed_at, lease_until=claimed_at + lease(), attempts=attempts
    )
    return Submission.objects.get(pk=submission.pk)


# --- the claim ------------------------------------------------------------------------


def test_a_queued_submission_is_claimed_once_under_a_lease(learner, sandbox):
    submission = queued(learner)
    with time_machine.travel(T0, tick=False):
        assert services._claim(submission.pk) == 1
        assert services._claim(submission.pk) is None  # running, its lease holds
    submission.refresh_from_db()
    assert submission.status == "running" and submission.attempts == 1
    assert submission.lease_until == T0 + lease()


def test_the_lease_is_the_wall_limit_and_the_margin(settings):
    settings.STUDY_LAB_WALL_SECONDS = 7
    settings.STUDY_LAB_LEASE_MARGIN_SECONDS = 20
    assert services.lease_seconds() == 27


def test_a_grading_whose_worker_died_is_taken_over_once_then_fails_as_a_fault(learner, sandbox):
    submission = running(learner)
    with time_machine.travel(T0 + lease() - dt.timedelta(seconds=1), tick=False):
        assert services.submission_grade(submission_id=submission.pk) is None  # lease holds
    assert sandbox.runs == []
    with time_machine.travel(T0 + lease() + dt.timedelta(seconds=1), tick=False):
        assert services._claim(submission.pk) == 2  # taken over
    submission.refresh_from_db()
    assert (submission.status, submission.attempts) == ("running", 2)
    # The taking-over worker dies too: the next message fails it, nothing runs.
    with time_machine.travel(T0 + 3 * lease(), tick=False):
        assert services.submission_grade(submission_id=submission.pk) is None
    submission.refresh_from_db()
    assert (submission.status, submission.passed) == ("failed", None)
    assert submission.diagnosis == services.SERVICE_FAULT
    assert sandbox.runs == []


def test_a_taken_over_grading_is_graded_by_the_new_claim(learner, sandbox):
    submission = running(learner)
    with time_machine.travel(T0 + lease() + dt.timedelta(seconds=1), tick=False):
        graded = services.submission_grade(submission_id=submission.pk)
    assert graded is not None and (graded.status, graded.passed) == ("done", True)
    assert len(sandbox.runs) == 1
    assert Submission.objects.get(pk=submission.pk).attempts == 2


def test_the_stale_claim_stores_nothing_after_a_takeover(learner, sandbox):
    submission = running(learner)
    with time_machine.travel(T0 + lease() + dt.timedelta(seconds=1), tick=False):
        assert services._claim(submission.pk) == 2
    from labs.grading import Graded

    late = services._store(
        submission=Submission.objects.get(pk=submission.pk),
        graded=Graded(status="done", passed=False, tests=[]),
        attempt=1,
    )
    assert late.status == "running"  # the first worker's late result is dropped
    stored = services._store(
        submission=Submission.objects.get(pk=submission.pk),
        graded=Graded(status="done", passed=True, tests=[]),
        attempt=2,
    )
    assert (stored.status, stored.passed) == ("done", True)


def test_a_fault_of_the_service_while_grading_fails_it_as_not_counted(
    learner, sandbox, monkeypatch
):
    from labs import grading

    submission = queued(learner)

    def broken(**kwargs):
        raise KeyError("a bug of the service")

    monkeypatch.setattr(grading, "grade", broken)
    graded = services.submission_grade(submission_id=submission.pk)
    assert graded is not None and (graded.status, graded.passed) == ("failed", None)
    assert graded.diagnosis == services.GRADING_FAULT


# --- the sweep ------------------------------------------------------------------------


def test_the_sweep_sends_what_waited_over_a_minute_once(learner, other_learner, sandbox, sent):
    fresh = queued(learner, at=T0 - dt.timedelta(seconds=30))
    stale = queued(other_learner, at=T0 - dt.timedelta(seconds=90))
    with time_machine.travel(T0, tick=False):
        assert services.submissions_sweep(at=timezone.now()) == {"published": 1, "failed": 0}
        assert sent == [stale.pk]
        # A second sweep right after sends nothing (the row's published_at moved).
        assert services.submissions_sweep(at=timezone.now()) == {"published": 0, "failed": 0}
    assert sent == [stale.pk]
    later = T0 + dt.timedelta(seconds=61)
    assert services.submissions_sweep(at=later)["published"] == 2  # both wait a minute now
    assert sorted(sent[1:]) == sorted([fresh.pk, stale.pk])


def test_the_sweep_sends_a_submission_never_sent_at_once(learner, sandbox, sent):
    submission = queued(learner, at=T0)
    Submission.objects.filter(pk=submission.pk).update(published_at=None)
    assert services.submissions_sweep(at=T0 + dt.timedelta(seconds=1))["published"] == 1
    assert sent == [submission.pk]


def test_the_sweep_sends_a_lost_grading_once_its_lease_ran_out(
    learner, other_learner, sandbox, sent
):
    lost = running(learner)
    exhausted = running(other_learner, attempts=services.MAX_ATTEMPTS)
    assert services.submissions_sweep(at=T0 + lease() - dt.timedelta(seconds=1)) == {
        "published": 0,
        "failed": 0,
    }
    after = T0 + lease() + dt.timedelta(seconds=1)
    assert services.submissions_sweep(at=after) == {"published": 1, "failed": 1}
    assert sent == [lost.pk]
    exhausted.refresh_from_db()
    assert (exhausted.status, exhausted.diagnosis) == ("failed", services.SERVICE_FAULT)
    assert services.submissions_sweep(at=after) == {"published": 0, "failed": 0}
    # The message sent is taken over by whichever worker gets it.
    with time_machine.travel(after, tick=False):
        assert tasks.grade_submission(lost.pk) == "done"


def test_the_sweep_task_runs_the_sweep(learner, sandbox, sent):
    queued(learner, at=timezone.now() - dt.timedelta(minutes=5))
    assert tasks.sweep_submissions() == {"published": 1, "failed": 0}


def test_the_beat_schedule_sweeps_the_labs(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["sweep-lab-submissions"]
    assert entry["task"] == tasks.sweep_submissions.name
    assert entry["schedule"] <= 60


# --- the broker at submit time --------------------------------------------------------


def test_a_broker_that_fails_at_submit_is_202_queued_and_the_sweep_sends_it(
    api, sandbox, monkeypatch, django_capture_on_commit_callbacks, caplog
):
    def down(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(tasks.grade_submission, "delay", down)
    with (
        caplog.at_level(logging.WARNING, logger="labs.tasks"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = api.post("/api/v1/labs/tiny/submissions/", {"code": CODE}, format="json")
    assert response.status_code == 202, response.content
    submission = Submission.objects.get()
    assert (submission.status, submission.published_at) == ("queued", None)
    assert "Could not enqueue the grading of lab submission" in caplog.text
    sent: list[int] = []
    monkeypatch.setattr(tasks.grade_submission, "delay", sent.append)
    assert services.submissions_sweep(at=timezone.now())["published"] == 1
    assert sent == [submission.pk]


def test_the_grading_is_sent_once_and_without_publish_retries(monkeypatch):
    seen = {}

    def apply_async(self, args=None, kwargs=None, **options):
        seen.update(options, args=args)

    monkeypatch.setattr(tasks.DjangoTask, "apply_async", apply_async)
    tasks.grade_submission.delay(7)
    assert seen["args"] == (7,)
    assert seen["retry"] is False and seen["expires"] == tasks.GRADING_EXPIRES


# --- one submission in flight per learner ---------------------------------------------


def test_a_second_submission_while_one_is_pending_is_409_with_retry_after(
    api, other_api, sandbox, sent
):
    first = api.post("/api/v1/labs/tiny/submissions/", {"code": CODE}, format="json")
    assert first.status_code == 202
    for lab in ("tiny", "second"):  # per learner, across labs
        refused = api.post(f"/api/v1/labs/{lab}/submissions/", {"code": CODE}, format="json")
        assert refused.status_code == 409
        body = refused.json()
        assert body["submission"] == first.json()["id"] and body["status"] == "queued"
        assert "one submission is graded at a time" in body["detail"]
        assert 1 <= int(refused["Retry-After"]) <= services.lease_seconds()
    assert (
        other_api.post("/api/v1/labs/tiny/submissions/", {"code": CODE}, format="json").status_code
        == 202
    )  # another learner is not held up
    assert Submission.objects.count() == 2
    # Once the first is graded, the learner may submit again.
    services.submission_grade(submission_id=first.json()["id"])
    again = api.post("/api/v1/labs/tiny/submissions/", {"code": CODE}, format="json")
    assert again.status_code == 202


def test_a_running_submissions_retry_after_is_the_rest_of_its_lease(learner, sandbox):
    submission = running(learner)
    now = T0 + dt.timedelta(seconds=5)
    assert services.retry_after(submission, now=now) == round(services.lease_seconds() - 5)


def test_the_database_refuses_a_second_pending_submission(learner):
    queued(learner)
    with pytest.raises(IntegrityError), transaction.atomic():
        queued(learner)
    Submission.objects.update(status="done", passed=True)
    queued(learner)  # a judged one does not count


def test_a_race_the_database_settles_is_still_a_409(api, learner, sandbox, sent, monkeypatch):
    # The early check saw nothing pending (a concurrent request had not committed yet).
    checks = iter([None])
    real = services.pending_submission
    monkeypatch.setattr(
        services, "pending_submission", lambda **kw: next(checks, None) or real(**kw)
    )
    queued(learner, at=timezone.now())
    refused = api.post("/api/v1/labs/tiny/submissions/", {"code": CODE}, format="json")
    assert refused.status_code == 409
    assert Submission.objects.count() == 1


def test_the_page_refuses_a_second_submission_and_keeps_the_code(client, learner, sandbox, sent):
    client.force_login(learner)
    assert client.post("/labs/tiny/", {"code": CODE}).status_code == 302
    page = client.post("/labs/second/", {"code": "def double(x):\n    return x\n"})
    assert page.status_code == 409
    assert int(page["Retry-After"]) >= 1
    text = page.content.decode()
    assert "one submission is graded at a time" in text and "to another lab" in text
    assert "return x" in text  # the code stays in the editor
    assert Submission.objects.count() == 1


def test_a_503_carries_retry_after_and_the_reason(api, client, learner, sandbox):
    sandbox.unavailable = "the labs worker has not reported for 6 minutes"
    response = api.post("/api/v1/labs/tiny/submissions/", {"code": CODE}, format="json")
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert "the labs worker has not reported for 6 minutes" in response.json()["detail"]
    client.force_login(learner)
    page = client.post("/labs/tiny/", {"code": CODE})
    assert page.status_code == 503 and int(page["Retry-After"]) > 0
    assert "The labs worker has not reported for 6 minutes." in page.content.decode()
    assert not Submission.objects.exists()
