"""A real labs worker, one process, grading hostile submissions through the API.

Each hostile submission is stored as done and not passed, its tests naming the limit or
the failure; the same worker process then grades the next one, and at the end the lab's
reference solution passes. The sandbox is the real one (bubblewrap), started by the
worker as in production; only the queue is this test's own.
"""

from __future__ import annotations

import pytest
from django.db import transaction

from labs import tasks
from labs.catalogue import LABS
from labs.models import Submission
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


def test_one_labs_worker_grades_hostile_code_and_goes_on_serving(celery_procs, api, monkeypatch):
    require_sandbox()
    # The grading task goes to this test's queue, not the shared "labs" one.
    monkeypatch.setattr(
        tasks.grade_submission,
        "delay_on_commit",
        lambda pk: transaction.on_commit(
            lambda: tasks.grade_submission.apply_async(args=[pk], queue=celery_procs.queue)
        ),
    )
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
