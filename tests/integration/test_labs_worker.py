"""A real labs worker grading through the API; killed during a grading; a broker that fails.

Each hostile submission is stored as done and not passed, its tests naming the limit or
the failure; the same worker process then grades the next one, and at the end the lab's
reference solution passes. A grading whose pool process, or whole worker, is killed with
``SIGKILL`` is taken over once the sweep sends it again, graded once, and the lab card's
review recorded once. A broker stopped or paused at submit time (a redis-server of the
test's own) gives 202 with the submission queued, never a 500. The sandbox is the real
one (bubblewrap), started by the worker as in production; only the queue is this test's
own.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from cards.models import Card, Deck, LabBinding, ReviewLog, ReviewState
from labs import services
from labs.catalogue import LABS
from labs.models import Submission
from labs.publishing import GRADE_SUBMISSION_TASK
from tests.labs import require_sandbox
from tests.pausing import paused

from .conftest import free_port, serving, wait_for
from .test_dead_broker import call, call_counting, log_broker_attempts

pytestmark = [
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.sandbox,
    pytest.mark.django_db(transaction=True),
]

LAB = "causal-mask"
LIMITS = {
    "STUDY_LAB_CPU_SECONDS": "2",
    "STUDY_LAB_WALL_SECONDS": "4",
    "STUDY_LAB_MEMORY_MB": "256",
    "STUDY_LAB_PROCESSES": "16",
}

# (what it tries, its code, words its failed tests must hold)
HOSTILE = [
    (
        "fork bomb",
        "import os\ndef causal_mask(n):\n    while True:\n        os.fork()\n",
        "more than 16 processes",
    ),
    (
        "memory bomb",
        "def causal_mask(n):\n    hoard = []\n    while True:\n"
        "        hoard.append(bytearray(10**7))\n",
        "more than 256 MB of memory",
    ),
    ("infinite loop", "def causal_mask(n):\n    while True:\n        pass\n", "of CPU time"),
    (
        "sleeping for ever",
        "import time\ndef causal_mask(n):\n    time.sleep(10_000)\n",
        "Stopped after 4 s",
    ),
    (
        "killing its parent, then a fake verdict",
        "import os\nprint('all tests passed')\n"
        "def causal_mask(n):\n    os.kill(os.getppid(), 9)\n    print('PASSED')\n    return None\n",
        "",
    ),
    (
        "code that ends the process at load",
        "import os\nos._exit(0)\n",
        "",
    ),
]


@pytest.fixture
def to_this_queue(celery_procs, monkeypatch):
    """Gradings (at submit and from the sweep) go to this test's queue on its worker's
    broker, not the shared "labs" one: sent by the project's app on a connection of their
    own, whatever app another test in this process made current."""
    from studyapp.celery import app

    def publish(pk: int) -> bool:
        with app.connection_for_write(celery_procs.redis_url) as connection:
            app.send_task(
                GRADE_SUBMISSION_TASK, args=[pk], queue=celery_procs.queue, connection=connection
            )
        return True

    monkeypatch.setattr(services, "publish_grading", publish)


def test_one_labs_worker_grades_hostile_code_and_goes_on_serving(celery_procs, api, to_this_queue):
    require_sandbox()
    worker = celery_procs.worker(concurrency=1, **LIMITS)

    def graded(code: str) -> dict:
        response = api.post(f"/api/v1/labs/{LAB}/submissions/", {"code": code}, format="json")
        assert response.status_code == 202, response.content
        pk = response.json()["id"]
        wait_for(
            lambda: Submission.objects.filter(
                pk=pk, status__in=[Submission.Status.DONE, Submission.Status.FAILED]
            ).exists(),
            timeout=60,
            what=f"submission {pk} graded",
            procs=[worker],
        )
        return api.get(f"/api/v1/labs/submissions/{pk}/").json()

    for what, code, words in HOSTILE:
        result = graded(code)
        assert (result["status"], result["passed"]) == ("done", False), (what, result)
        failed = [test for test in result["tests"] if not test["passed"]]
        assert failed and all(test["message"] for test in failed), (what, result)
        assert words in " ".join(test["message"] for test in failed), (what, result)
        assert worker.poll() is None, f"the worker died on the {what}"

    reference = graded(LABS[LAB].reference)
    assert (reference["status"], reference["passed"]) == ("done", True), reference
    assert worker.poll() is None
    # The worker's one pool process served every submission: none was lost or replaced.
    log = worker.log()
    assert "WorkerLostError" not in log and "Process 'ForkPoolWorker" not in log, log


# --- a worker killed during a grading, and the sweep -----------------------------------

# A short wall limit and lease, so a lost grading is taken over within seconds.
LEASED = {**LIMITS, "STUDY_LAB_WALL_SECONDS": "3", "STUDY_LAB_LEASE_MARGIN_SECONDS": "2"}
SLEEPER = "import time\ndef causal_mask(n):\n    time.sleep(600)\n"


@pytest.fixture
def lab_card_due(learner, api):
    """A lab card of ``LAB`` due today for ``learner``: the day's first graded submission
    of the lab records its review."""
    deck = Deck.objects.create(slug="labs-deck", title="Labs")
    card = Card.objects.create(deck=deck, key="mask", kind="lab", lab=LAB, prompt="Mask it.")
    assert api.post("/api/v1/decks/labs-deck/enroll/").status_code == 200
    ReviewState.objects.filter(learner=learner, card=card).update(due_on=dt.date(2020, 1, 1))
    return card


def pool_children(pid: int) -> list[int]:
    """The prefork pool's processes of the worker ``pid``."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def submission(pk: int) -> Submission:
    return Submission.objects.get(pk=pk)


def claimed_and_sandboxed(pk: int, worker) -> None:
    """Wait until ``pk`` is running in the worker with its sandbox started."""
    wait_for(
        lambda: submission(pk).status == Submission.Status.RUNNING,
        timeout=60,
        what=f"submission {pk} claimed",
        procs=[worker],
    )
    wait_for(
        lambda: any(pool_children(child) for child in pool_children(worker.pid)),
        timeout=30,
        what="the sandbox started under the pool process",
        procs=[worker],
    )


def swept_until_graded(pk: int, procs) -> Submission:
    """Run the sweep (as beat would) until ``pk`` is stored: its lease runs out first."""

    def graded() -> bool:
        services.submissions_sweep(at=timezone.now())
        return submission(pk).status in (Submission.Status.DONE, Submission.Status.FAILED)

    wait_for(graded, timeout=90, what=f"submission {pk} taken over and graded", procs=procs)
    return submission(pk)


def assert_graded_once_and_reviewed_once(pk: int, learner, card) -> None:
    row = submission(pk)
    # Taken over once: done, not passed (it slept past the wall limit again), recorded once.
    assert (row.status, row.passed, row.attempts) == ("done", False, 2), row.diagnosis
    assert any("Stopped after 3 s" in test["message"] for test in row.tests), row.tests
    assert ReviewLog.objects.filter(learner=learner, card=card).count() == 1
    assert LabBinding.objects.get(card=card).submission_id == pk
    assert LabBinding.objects.get(card=card).review.result == "fail"


def test_a_pool_process_killed_during_a_grading_is_taken_over_once(
    celery_procs, api, learner, lab_card_due, to_this_queue
):
    require_sandbox()
    worker = celery_procs.worker(concurrency=1, **LEASED)
    response = api.post(f"/api/v1/labs/{LAB}/submissions/", {"code": SLEEPER}, format="json")
    assert response.status_code == 202, response.content
    pk = response.json()["id"]
    claimed_and_sandboxed(pk, worker)
    (child,) = pool_children(worker.pid)
    os.kill(child, signal.SIGKILL)
    # The redelivered message finds the grading claimed under a live lease: it waits for
    # the sweep, which sends it again once the lease has run out.
    swept_until_graded(pk, [worker])
    assert_graded_once_and_reviewed_once(pk, learner, lab_card_due)
    assert worker.poll() is None


def test_a_whole_labs_worker_killed_during_a_grading_is_taken_over_by_the_next(
    celery_procs, api, learner, lab_card_due, to_this_queue
):
    require_sandbox()
    first = celery_procs.worker(concurrency=1, **LEASED)
    response = api.post(f"/api/v1/labs/{LAB}/submissions/", {"code": SLEEPER}, format="json")
    pk = response.json()["id"]
    claimed_and_sandboxed(pk, first)
    celery_procs.kill(first)  # kill -9 of the worker's whole process group
    # The learner waits on it: a second submission is refused until it is graded.
    refused = api.post(f"/api/v1/labs/{LAB}/submissions/", {"code": SLEEPER}, format="json")
    assert refused.status_code == 409 and refused.json()["submission"] == pk
    second = celery_procs.worker(concurrency=1, **LEASED)
    swept_until_graded(pk, [second])
    assert_graded_once_and_reviewed_once(pk, learner, lab_card_due)


# --- the broker at submit time ---------------------------------------------------------


@pytest.fixture
def private_broker(tmp_path):
    """A redis-server of this test's own on a free port (the shared one stays up)."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    import redis

    wait_for(
        lambda: _pings(redis.Redis.from_url(url, socket_timeout=0.5)),
        timeout=20,
        what="the private redis-server",
    )
    try:
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.terminate()
            proc.wait(timeout=10)


def _pings(client) -> bool:
    try:
        return bool(client.ping())
    except Exception:
        return False


@pytest.fixture
def web_on_private_broker(tmp_path, private_broker, monkeypatch):
    proc, url = private_broker
    log_broker_attempts(monkeypatch)
    with serving(tmp_path, url) as (base, server_log):
        yield proc, base, server_log


# A failure guard: a paused broker is resumed after this many seconds. A send that waited
# for it would be answered only then; one bounded send is answered while it is paused.
PAUSE_GUARD = 30.0


@pytest.mark.parametrize("failure", ["stopped", "paused"])
def test_a_broker_that_fails_at_submit_time_gives_202_queued_never_500(
    web_on_private_broker, learner, other_learner, failure
):
    require_sandbox()
    broker, base, server_log = web_on_private_broker
    first, token = (Token.objects.create(user=u).key for u in (other_learner, learner))
    body = {"code": LABS[LAB].reference}
    path = f"/api/v1/labs/{LAB}/submissions/"
    # One submission while the broker is up: the server's sandbox check, its cache and
    # its broker connection are warm, so the send below goes over a connection kept open.
    status, _ = call(base, "POST", path, first, body)
    assert status == 202
    if failure == "stopped":
        broker.terminate()
        broker.wait(timeout=10)
        status, answer, attempts = call_counting(base, server_log, "POST", path, token, body)
    else:
        with paused(broker, guard=PAUSE_GUARD) as pause:
            status, answer, attempts = call_counting(base, server_log, "POST", path, token, body)
            assert pause.held(), "the send waited for the paused broker to come back"
    assert status in (202, 503), (status, answer)
    # One send, over the connection the first submission opened, and no publish retry: a
    # retry connects to the broker again first, which the server would have logged.
    assert attempts == 0, server_log()[-3000:]
    if status == 503:  # refused: nothing saved
        assert not Submission.objects.filter(learner=learner).exists()
        return
    row = Submission.objects.get(pk=answer["id"])
    assert row.status == "queued" and answer["status"] == "queued"
    assert row.published_at is None  # not sent: the next sweep sends it
    log = server_log()
    assert "Could not enqueue the grading of lab submission" in log, log
    assert "Internal Server Error" not in log and '" 500 ' not in log
    # A retry by the client is not a duplicate: the submission in flight refuses it.
    status, answer = call(base, "POST", path, token, body)
    assert status == 409 and answer["submission"] == row.pk
    assert Submission.objects.filter(learner=learner).count() == 1
