"""Grading: what a run becomes (``labs.grading``), the task's guarantees, and whole
submissions through the real sandbox.

Units use ``tiny_lab.FakeSandbox``, which runs nothing. The tests marked ``sandbox``
go through ``labs.sandbox`` itself: the only place any submitted source runs.
"""

from __future__ import annotations

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from labs import grading, sandbox, services, tasks
from labs.models import Submission
from labs.sandbox.limits import LIMITS
from labs.spec import Returned, RunResult, Verdict
from labs.spec import TestOutcome as Outcome
from studyapp.configuration import VARIABLE

from . import require_sandbox
from .tiny_lab import TINY, FakeSandbox, install, right, wrong

CODE = "def double(x):\n    return 2 * x\n"


@pytest.fixture
def fake(monkeypatch) -> FakeSandbox:
    return install(monkeypatch)


def test_right_values_pass_every_test(fake):
    graded = grading.grade(lab=TINY, code=CODE, seed=1)
    assert graded.status == "done" and graded.passed is True
    assert [t["name"] for t in graded.tests] == ["double", "halve"]
    assert graded.duration_ms == 42


def test_the_seed_makes_the_calls(fake):
    grading.grade(lab=TINY, code=CODE, seed=5)
    grading.grade(lab=TINY, code=CODE, seed=5)
    grading.grade(lab=TINY, code=CODE, seed=6)
    same, again, other = (calls[0].args[0] for _, calls in fake.runs)
    assert (same == again).all() and not (same == other).all()


def test_code_that_does_not_load_fails_every_test_saying_so(fake):
    fake.reply = lambda calls: RunResult(load_error="SyntaxError: invalid syntax (line 2)")
    graded = grading.grade(lab=TINY, code=CODE, seed=1)
    assert (graded.status, graded.passed) == ("done", False)
    assert [t["passed"] for t in graded.tests] == [False, False]
    assert all("SyntaxError: invalid syntax (line 2)" in t["message"] for t in graded.tests)


def test_a_malformed_answer_is_judged_failed_not_a_sandbox_fault(fake):
    bad = "the lab runner's answer is malformed (line 1)"
    fake.reply = lambda calls: RunResult(failure=bad, malformed=bad, output="hi\n")
    graded = grading.grade(lab=TINY, code=CODE, seed=1)
    assert (graded.status, graded.passed) == ("done", False)
    assert [t["name"] for t in graded.tests] == ["double", "halve"]
    assert all(not t["passed"] and bad in t["message"] for t in graded.tests)
    assert graded.output == "hi\n"
    # A failure of the sandbox itself stays a fault of the service.
    fake.reply = lambda calls: RunResult(failure="the sandbox did not start")
    assert grading.grade(lab=TINY, code=CODE, seed=1).status == "failed"


def test_a_limit_lands_on_the_running_test_or_on_a_limits_test(fake):
    def stopped_in_halve(calls):
        made = {c.key: Returned(c.args[0] * 2) for c in calls if c.function == "double"}
        return RunResult(returned=made, limit="memory", limit_message="Stopped: 512 MB used.")

    fake.reply = stopped_in_halve
    graded = grading.grade(lab=TINY, code=CODE, seed=1)
    assert (graded.status, graded.passed) == ("done", False)
    assert graded.tests == [
        {"name": "double", "passed": True, "message": "Passed."},
        {"name": "halve", "passed": False, "message": "Stopped: 512 MB used."},
    ]
    # Keys that name no test: the limit is a test of its own, first.
    fake.reply = lambda calls: RunResult(limit="output", limit_message="Too much output.")
    other = grading.grade(lab=_renamed(TINY), code=CODE, seed=1)
    assert other.tests[0] == {"name": "limits", "passed": False, "message": "Too much output."}
    assert other.passed is False


def _renamed(lab):
    from dataclasses import replace

    def judge(calls, run):
        verdict = lab.judge(calls, run)
        return Verdict(tuple(Outcome(f"t-{t.name}", t.passed, t.message) for t in verdict.tests))

    return replace(lab, judge=judge, tests=("t-double", "t-halve"))


def test_a_limit_fails_even_when_the_judge_would_pass(fake):
    def every_value_then_a_limit(calls):
        return RunResult(returned=right(calls).returned, limit="time", limit_message="5 s.")

    fake.reply = every_value_then_a_limit
    graded = grading.grade(lab=TINY, code=CODE, seed=1)
    assert graded.passed is False
    assert graded.tests[0]["name"] == "limits"


def test_no_sandbox_or_a_broken_one_is_failed_with_the_reason(fake):
    fake.unavailable = "user namespaces are disabled"
    graded = grading.grade(lab=TINY, code=CODE, seed=1)
    assert (graded.status, graded.passed) == ("failed", None)
    assert "user namespaces are disabled" in graded.diagnosis

    def broken(calls):
        raise OSError("pipe closed")

    fake.unavailable, fake.reply = None, broken
    graded = grading.grade(lab=TINY, code=CODE, seed=1)
    assert graded.status == "failed" and "sandbox failed" in graded.diagnosis


def test_a_judge_that_breaks_fails_the_submission_without_judging_it(fake):
    from dataclasses import replace

    def judge(calls, run):
        raise ZeroDivisionError

    graded = grading.grade(lab=replace(TINY, judge=judge), code=CODE, seed=1)
    assert graded.status == "failed" and graded.passed is None
    assert graded.diagnosis == grading.FAULT


def test_text_is_made_storable_and_output_capped():
    assert grading.clean_text("a\x00b\ud800") == "a\\x00b\\ud800"
    assert grading.clean_text(None) == ""
    assert grading.capped_output("abc", 3) == "abc"
    assert grading.capped_output("abcd", 3) == "abc\n… (output cut at 3 characters)"


def test_the_limits_come_from_the_settings(settings):
    settings.STUDY_LAB_CPU_SECONDS = 2
    settings.STUDY_LAB_MEMORY_MB = 256
    settings.STUDY_LAB_OUTPUT_KB = 8
    limits = grading.lab_limits()
    assert (limits.cpu_seconds, limits.memory_bytes, limits.output_bytes) == (2, 256 * 2**20, 8192)
    # The rest keep the sandbox's own defaults.
    default = sandbox.Limits()
    assert (limits.wall_seconds, limits.processes, limits.file_bytes) == (
        default.wall_seconds,
        default.processes,
        default.file_bytes,
    )


def test_the_settings_defaults_are_the_sandbox_defaults(settings):
    # The settings read here come from the table, with no STUDY_LAB_* set by the suite.
    for limit in LIMITS:
        setattr(settings, limit.variable, VARIABLE[limit.variable].read({}))
    assert grading.lab_limits() == sandbox.Limits() == sandbox.DEFAULT_LIMITS


@pytest.mark.django_db
def test_a_grading_cut_short_is_failed_and_a_second_run_does_nothing(fake, learner, monkeypatch):
    submission = Submission.objects.create(learner=learner, lab="tiny", code=CODE, seed=3)

    def cut_short(*, submission_id):
        services._claim(submission_id)
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(services, "submission_grade", cut_short)
    assert tasks.grade_submission(submission.pk) == "failed"
    submission.refresh_from_db()
    assert submission.status == "failed" and "took too long" in submission.diagnosis
    monkeypatch.undo()
    install(monkeypatch)
    assert tasks.grade_submission(submission.pk) is None  # not queued: nothing to do
    assert services.submission_fail(submission_id=submission.pk, reason="again") is None


@pytest.mark.django_db
def test_a_lab_gone_from_the_catalogue_fails_its_queued_submissions(fake, learner):
    submission = Submission.objects.create(learner=learner, lab="retired", code=CODE, seed=3)
    graded = services.submission_grade(submission_id=submission.pk)
    assert graded is not None and graded.status == "failed"
    assert "no longer offered" in graded.diagnosis
    assert fake.runs == []


def test_the_task_goes_to_the_labs_queue(settings):
    from studyapp.celery import app

    route = app.amqp.router.route({}, tasks.grade_submission.name)
    assert route["queue"].name == "labs"
    assert settings.CELERY_TASK_ROUTES == {"labs.tasks.*": {"queue": "labs"}}


# --- the real sandbox --------------------------------------------------------------


@pytest.fixture
def small_limits(settings):
    settings.STUDY_LAB_CPU_SECONDS = 2
    settings.STUDY_LAB_WALL_SECONDS = 4


@pytest.mark.sandbox
@pytest.mark.django_db
def test_a_labs_reference_passes_through_the_sandbox_and_the_api(
    api, monkeypatch, django_capture_on_commit_callbacks, small_limits
):
    require_sandbox()
    monkeypatch.setattr(tasks.grade_submission, "delay", tasks.grade_submission)
    from labs.catalogue import LABS

    lab = LABS["causal-mask"]
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            "/api/v1/labs/causal-mask/submissions/", {"code": lab.reference}, format="json"
        )
    assert response.status_code == 202
    result = api.get(f"/api/v1/labs/submissions/{response.json()['id']}/").json()
    assert (result["status"], result["passed"]) == ("done", True), result
    assert [t["name"] for t in result["tests"]] == list(lab.tests)


@pytest.mark.sandbox
@pytest.mark.django_db
def test_an_endless_loop_is_done_not_passed_naming_the_limit(
    api, monkeypatch, django_capture_on_commit_callbacks, small_limits
):
    require_sandbox()
    monkeypatch.setattr(tasks.grade_submission, "delay", tasks.grade_submission)
    code = "def causal_mask(n):\n    while True:\n        pass\n"
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/v1/labs/causal-mask/submissions/", {"code": code}, format="json")
    result = api.get(f"/api/v1/labs/submissions/{response.json()['id']}/").json()
    assert (result["status"], result["passed"]) == ("done", False), result
    messages = " ".join(t["message"] for t in result["tests"] if not t["passed"])
    assert "time" in messages.lower() or "cpu" in messages.lower()


def test_wrong_values_name_what_came_back(fake):
    fake.reply = wrong
    graded = grading.grade(lab=TINY, code=CODE, seed=1)
    assert graded.passed is False and "expected" in graded.tests[0]["message"]


def test_the_filesystem_broker_keeps_the_labs_queue_apart(tmp_path, settings):
    # The embedded default: kombu's filesystem broker. A grading task lands in the labs
    # queue only, so the study core's worker (-Q celery) never takes it.
    from celery import Celery

    queue, control = tmp_path / "queue", tmp_path / "control"
    queue.mkdir()
    app = Celery(
        "study-broker-check",
        # Not the process's current app: later tests publish through the project's.
        set_as_current=False,
        broker="filesystem://",
        broker_transport_options={
            "data_folder_in": str(queue),
            "data_folder_out": str(queue),
            "control_folder": str(control),
        },
        task_routes=settings.CELERY_TASK_ROUTES,
    )
    app.send_task(tasks.grade_submission.name, args=[1])
    assert [p.name.split(".", 1)[1] for p in queue.iterdir()] == ["labs.msg"]
    with app.connection_for_read() as connection:
        assert connection.SimpleQueue("celery").qsize() == 0
        labs = connection.SimpleQueue("labs")
        assert labs.qsize() == 1
        assert labs.get(timeout=1).headers["task"] == "labs.tasks.grade_submission"
