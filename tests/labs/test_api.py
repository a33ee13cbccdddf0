"""The lab API as the contract states it, with a sandbox that runs nothing.

The sandbox is ``tests.labs.tiny_lab.FakeSandbox``: each test chooses what the run
hands back. Grading runs as the worker would run it, after the request's commit.
"""

from __future__ import annotations

import pytest

from labs import tasks
from labs.models import Submission
from labs.spec import Returned, RunResult

from .tiny_lab import FakeSandbox, install, wrong

pytestmark = pytest.mark.django_db

CODE = "def double(x):\n    return 2 * x\n"


@pytest.fixture
def sandbox(monkeypatch) -> FakeSandbox:
    return install(monkeypatch)


@pytest.fixture
def worker(monkeypatch, django_capture_on_commit_callbacks):
    """Submit through the API and let the grading task run after commit, in process."""
    monkeypatch.setattr(tasks.grade_submission, "delay", tasks.grade_submission)

    def submit(client, code=CODE, lab="tiny"):
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            response = client.post(
                f"/api/v1/labs/{lab}/submissions/", {"code": code}, format="json"
            )
        return response, callbacks

    return submit


def test_labs_are_listed_in_order_and_one_is_read(api, sandbox):
    listed = api.get("/api/v1/labs/")
    assert listed.status_code == 200
    body = listed.json()
    assert body["count"] == 2
    assert [lab["slug"] for lab in body["results"]] == ["second", "tiny"]
    one = api.get("/api/v1/labs/tiny/").json()
    assert one == {
        "slug": "tiny",
        "title": "Double and halve",
        "prompt": "Write `double(x)` returning $2x$ and `halve(x)` returning $x/2$.",
        "starter_code": "import numpy as np\n\n\ndef double(x):\n    ...\n",
        "tests": ["double", "halve"],
    }
    assert "reference" not in one


def test_an_unknown_lab_is_404_and_saves_nothing(api, sandbox):
    assert api.get("/api/v1/labs/nope/").status_code == 404
    response = api.post("/api/v1/labs/nope/submissions/", {"code": CODE}, format="json")
    assert response.status_code == 404
    assert api.get("/api/v1/labs/nope/submissions/").status_code == 404
    assert not Submission.objects.exists()


def test_without_credentials_every_lab_route_is_401(anon_api, sandbox):
    for path in ("/api/v1/labs/", "/api/v1/labs/tiny/", "/api/v1/labs/tiny/submissions/"):
        assert anon_api.get(path).status_code == 401
    response = anon_api.post("/api/v1/labs/tiny/submissions/", {"code": CODE}, format="json")
    assert response.status_code == 401
    assert not Submission.objects.exists()


NO_DETAILS = {"expected": "", "got": "", "input": "", "hint": "", "mistake": None}


def test_a_submission_is_queued_then_judged_passed(api, learner, sandbox, worker):
    response, callbacks = worker(api)
    assert response.status_code == 202
    queued = response.json()
    assert set(queued) == {"id", "lab", "status", "created_at"}
    assert (queued["lab"], queued["status"]) == ("tiny", "queued")
    assert len(callbacks) == 1  # enqueued once, after commit
    code, calls = sandbox.runs[0]
    assert code == CODE
    assert [c.key for c in calls] == ["double/vector", "double/matrix", "halve/number"]
    result = api.get(f"/api/v1/labs/submissions/{queued['id']}/").json()
    assert result == {
        "id": queued["id"],
        "lab": "tiny",
        "status": "done",
        "passed": True,
        "tests": [
            {"name": name, "passed": True, "message": "Passed.", **NO_DETAILS}
            for name in ("double", "halve")
        ],
        "diagnosis": "",
        "mistake": None,
        "output": "hello from the code\n",
        "duration_ms": 42,
        "created_at": queued["created_at"],
    }
    stored = Submission.objects.get()
    assert stored.learner == learner and stored.started_at and stored.finished_at


def test_a_submission_judged_before_plain_words_reads_as_today(api, sandbox, worker):
    response, _ = worker(api)
    Submission.objects.filter(pk=response.json()["id"]).update(
        passed=False,
        tests=[
            {"name": "double", "passed": True, "message": "ok"},
            {"name": "halve", "passed": False, "message": "no_scale: the old words"},
        ],
        diagnosis="no_scale: This matches the scores without dividing.",
    )
    result = api.get(f"/api/v1/labs/submissions/{response.json()['id']}/").json()
    assert [t["message"] for t in result["tests"]] == ["Passed.", "the old words"]
    assert result["diagnosis"] == "This matches the scores without dividing."
    assert result["mistake"] == "no_scale"


def test_wrong_values_are_done_not_passed_with_the_judges_words(api, sandbox, worker):
    sandbox.reply = wrong
    response, _ = worker(api)
    result = api.get(f"/api/v1/labs/submissions/{response.json()['id']}/").json()
    assert (result["status"], result["passed"]) == ("done", False)
    assert [t["passed"] for t in result["tests"]] == [False, False]
    first = result["tests"][0]
    assert first["message"].startswith("double/vector: expected")
    assert first["expected"].startswith("[") and first["got"].startswith("[")
    assert first["input"].startswith("x = [") and first["hint"] == "Multiply x by 2."
    assert first["mistake"] == "no_scale"
    # the code is a machine field of its own; the words a learner reads never hold it
    assert result["diagnosis"] == "The code does not double."
    assert result["mistake"] == "no_scale"
    assert "no_scale" not in first["message"] + result["diagnosis"]


def test_every_submission_gets_fresh_inputs(api, sandbox, worker):
    worker(api)
    worker(api)
    first, second = (calls[0].args[0] for _, calls in sandbox.runs)
    assert not (first == second).all()


def test_a_broken_limit_is_done_not_passed_on_the_test_that_was_running(api, sandbox, worker):
    def stopped(calls):
        return RunResult(
            returned={calls[0].key: Returned(calls[0].args[0] * 2)},
            limit="time",
            limit_message="Stopped after 5 s of CPU time: is there an endless loop?",
        )

    sandbox.reply = stopped
    response, _ = worker(api)
    result = api.get(f"/api/v1/labs/submissions/{response.json()['id']}/").json()
    assert (result["status"], result["passed"]) == ("done", False)
    assert result["tests"][0] == {
        "name": "double",
        "passed": False,
        "message": "Stopped after 5 s of CPU time: is there an endless loop?",
        **NO_DETAILS,
    }


def test_a_sandbox_fault_is_failed_with_the_reason(api, sandbox, worker):
    sandbox.reply = lambda calls: RunResult(failure="the runner's answer was malformed")
    response, _ = worker(api)
    result = api.get(f"/api/v1/labs/submissions/{response.json()['id']}/").json()
    assert (result["status"], result["passed"], result["tests"]) == ("failed", None, [])
    assert "the runner's answer was malformed" in result["diagnosis"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"code": "x" * (64 * 1024 + 1)}, "at most 65,536 bytes"),
        ({"code": "é" * (32 * 1024) + "x"}, "at most 65,536 bytes"),  # bytes, not characters
        ({"code": ""}, "empty"),
        ({"code": "   \n"}, "empty"),
        ({"code": 12}, "as a string"),
        ({"code": None}, "null"),
        ({"code": "print(1)\x00"}, "NUL"),
        ('{"code": "a\\ud800"}', "UTF-8"),  # a lone surrogate, escaped in the JSON text
        ({}, "required"),
    ],
)
def test_code_it_cannot_take_is_400_naming_code(api, sandbox, body, expected):
    if isinstance(body, str):
        response = api.post("/api/v1/labs/tiny/submissions/", body, content_type="application/json")
    else:
        response = api.post("/api/v1/labs/tiny/submissions/", body, format="json")
    assert response.status_code == 400
    assert expected in " ".join(response.json()["code"])
    assert not Submission.objects.exists()
    assert sandbox.runs == []


def test_code_of_exactly_64_kib_is_taken(api, sandbox, worker):
    code = "#" + "x" * (64 * 1024 - 1)
    response, _ = worker(api, code=code)
    assert response.status_code == 202
    assert len(Submission.objects.get().code.encode()) == 64 * 1024


def test_unknown_fields_and_other_bodies_are_400(api, sandbox):
    response = api.post(
        "/api/v1/labs/tiny/submissions/", {"code": CODE, "lang": "py"}, format="json"
    )
    assert response.status_code == 400
    assert "lang" in response.json()
    assert api.post("/api/v1/labs/tiny/submissions/", [CODE], format="json").status_code == 400
    response = api.post("/api/v1/labs/tiny/submissions/", "code=1", content_type="text/plain")
    assert response.status_code == 415
    assert not Submission.objects.exists()


def test_without_a_sandbox_post_is_503_with_the_reason_and_saves_nothing(api, sandbox):
    sandbox.unavailable = "bubblewrap (bwrap) is not installed"
    response = api.post("/api/v1/labs/tiny/submissions/", {"code": CODE}, format="json")
    assert response.status_code == 503
    assert "bubblewrap (bwrap) is not installed" in response.json()["detail"]
    assert not Submission.objects.exists()
    assert sandbox.runs == []


def test_another_learners_submission_is_404(api, other_api, sandbox, worker):
    response, _ = worker(api)
    sid = response.json()["id"]
    assert other_api.get(f"/api/v1/labs/submissions/{sid}/").status_code == 404
    assert other_api.get("/api/v1/labs/tiny/submissions/").json()["count"] == 0
    for bad in ("0", "99999999999999999999", "-1"):
        assert api.get(f"/api/v1/labs/submissions/{bad}/").status_code == 404


def test_my_submissions_of_a_lab_newest_first(api, other_api, sandbox, worker):
    ids = [worker(api)[0].json()["id"] for _ in range(3)]
    worker(other_api)
    worker(api, lab="second")
    listed = api.get("/api/v1/labs/tiny/submissions/").json()
    assert listed["count"] == 3
    assert [s["id"] for s in listed["results"]] == ids[::-1]
    assert {"passed", "tests", "output", "diagnosis"} <= set(listed["results"][0])


def test_submissions_are_throttled_per_learner_with_retry_after(api, sandbox, limits, worker):
    limits(lab_submit="2/minute")
    for _ in range(2):
        response, _ = worker(api)  # each graded before the next: one in flight at a time
        assert response.status_code == 202
    refused = api.post("/api/v1/labs/tiny/submissions/", {"code": CODE}, format="json")
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert Submission.objects.count() == 2
    assert api.get("/api/v1/labs/tiny/submissions/").status_code == 200  # reads are not


def test_grading_twice_does_nothing_the_second_time(api, sandbox, worker):
    response, _ = worker(api)
    sid = response.json()["id"]
    assert tasks.grade_submission(sid) is None
    assert len(sandbox.runs) == 1
    assert Submission.objects.get().status == "done"


def test_printed_output_is_capped_and_stored_whatever_it_holds(api, sandbox, worker, settings):
    settings.STUDY_LAB_OUTPUT_CHARS = 100
    sandbox.reply = lambda calls: RunResult(output="\x00ab\ud800" + "y" * 500)
    response, _ = worker(api)
    output = api.get(f"/api/v1/labs/submissions/{response.json()['id']}/").json()["output"]
    assert output.startswith("\\x00ab\\ud800yyy")
    assert output.endswith("(output cut at 100 characters)")
    assert len(output) < 150


def test_the_schema_documents_the_lab_endpoints(anon_api):
    schema = anon_api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    assert {
        "/api/v1/labs/",
        "/api/v1/labs/{slug}/",
        "/api/v1/labs/{slug}/submissions/",
        "/api/v1/labs/submissions/{submission_id}/",
    } <= set(paths)
    post = paths["/api/v1/labs/{slug}/submissions/"]["post"]
    assert {"202", "409", "503"} <= set(post["responses"])
    for refusal in ("409", "503"):
        assert "Retry-After" in post["responses"][refusal]["headers"]
    pending = post["responses"]["409"]["content"]["application/json"]["schema"]["$ref"]
    component = schema["components"]["schemas"][pending.rsplit("/", 1)[1]]
    assert {"detail", "submission", "status"} <= set(component["properties"])
