"""The lab pages through Django's test client: access, the editor, submitting, results.

No learner code runs here: submissions are created by the service (and never graded, as
no worker runs) or written directly in their final states, as the grader leaves them.
"""

from __future__ import annotations

import html
import re

import numpy as np
import pytest
from django.test import Client

from labs import selectors
from labs.models import Submission
from studyapp.throttling import WEB_FORM_SCOPES

pytestmark = pytest.mark.django_db

LIMIT = 64 * 1024


@pytest.fixture
def client_for():
    def make(user, *, csrf: bool = False) -> Client:
        client = Client(enforce_csrf_checks=csrf)
        client.force_login(user)
        return client

    return make


@pytest.fixture
def labs():
    return list(selectors.labs_list())


@pytest.fixture
def lab(labs):
    return labs[0]


def judged(learner, lab, *, passed: bool, code: str = "def f():\n    return 1\n", **fields):
    """A submission as the grader leaves it: done, with every test's verdict."""
    tests = [
        {
            "name": name,
            "passed": passed or i > 0,
            "message": "ok" if passed or i > 0 else "expected shape (6, 8), got (8, 6)",
        }
        for i, name in enumerate(lab.tests)
    ]
    values = {
        "learner": learner,
        "lab": lab.slug,
        "code": code,
        "status": Submission.Status.DONE,
        "passed": passed,
        "tests": tests,
        "diagnosis": "" if passed else "Softmax over the wrong axis: each column sums to 1.",
        "output": "hello from the learner\n",
        "duration_ms": 420,
        "seed": 1,
        **fields,
    }
    return Submission.objects.create(**values)


def text_of(response) -> str:
    """The page's visible words, tags stripped, spaces collapsed."""
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", response.content.decode(), flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


# --- Access -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/labs/",
        "/labs/{slug}/",
        "/labs/{slug}/submissions/1/",
        "/labs/{slug}/submissions/1/result/",
    ],
)
def test_lab_pages_send_anonymous_visitors_to_log_in(lab, path):
    response = Client().get(path.format(slug=lab.slug))
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


def test_an_unknown_lab_is_404(client_for, learner):
    client = client_for(learner)
    assert client.get("/labs/no-such-lab/").status_code == 404
    assert client.post("/labs/no-such-lab/", {"code": "x = 1"}).status_code == 404
    assert not Submission.objects.exists()


def test_another_learners_submission_is_404_everywhere(client_for, learner, other_learner, lab):
    theirs = judged(other_learner, lab, passed=True, code="SECRET = 42\n")
    client = client_for(learner)
    for path in (
        f"/labs/{lab.slug}/submissions/{theirs.pk}/",
        f"/labs/{lab.slug}/submissions/{theirs.pk}/result/",
    ):
        response = client.get(path)
        assert response.status_code == 404
        assert b"SECRET" not in response.content
    page = client.get(f"/labs/{lab.slug}/")
    assert b"SECRET" not in page.content
    assert f"/submissions/{theirs.pk}/".encode() not in page.content


def test_a_submission_seen_under_another_labs_address_is_404(client_for, learner, labs):
    mine = judged(learner, labs[0], passed=True)
    client = client_for(learner)
    assert client.get(f"/labs/{labs[1].slug}/submissions/{mine.pk}/").status_code == 404
    assert client.get(f"/labs/{labs[0].slug}/submissions/{mine.pk}/").status_code == 200


@pytest.mark.parametrize("pk", ["0", "99999999999999999999", "12abc"])
def test_odd_submission_ids_are_404_not_errors(client_for, learner, lab, pk):
    assert client_for(learner).get(f"/labs/{lab.slug}/submissions/{pk}/").status_code == 404


def test_the_pages_answer_only_their_methods(client_for, learner, lab):
    client = client_for(learner)
    assert client.post("/labs/").status_code == 405
    assert client.put(f"/labs/{lab.slug}/").status_code == 405
    mine = judged(learner, lab, passed=True)
    assert client.post(f"/labs/{lab.slug}/submissions/{mine.pk}/").status_code == 405


def test_the_nav_links_to_the_labs(client_for, learner, lab):
    client = client_for(learner)
    assert b'<a href="/labs/">Labs</a>' in client.get("/").content
    assert (
        b'<a href="/labs/" aria-current="page">Labs</a>' in client.get(f"/labs/{lab.slug}/").content
    )


# --- The list ---------------------------------------------------------------------


def test_the_list_shows_every_lab_in_order_with_what_it_asks(client_for, learner, labs):
    response = client_for(learner).get("/labs/")
    assert response.status_code == 200
    html = response.content.decode()
    positions = [html.index(f'href="/labs/{lab.slug}/"') for lab in labs]
    assert positions == sorted(positions)
    for row in response.context["rows"]:
        assert row["summary"], f"{row['lab'].slug} has no line saying what it asks"
        assert row["words"] == "Not tried"
    assert text_of(response).count("Not tried") == len(labs)


def test_the_list_shows_the_learners_best_status(client_for, learner, other_learner, labs):
    judged(learner, labs[0], passed=False)
    judged(learner, labs[0], passed=True)
    judged(learner, labs[0], passed=False)  # a pass is kept after a later failure
    judged(learner, labs[1], passed=False)
    judged(other_learner, labs[2], passed=True)  # someone else's pass is not mine
    Submission.objects.create(learner=learner, lab=labs[3].slug, code="x", status="queued", seed=1)
    rows = {r["lab"].slug: r for r in client_for(learner).get("/labs/").context["rows"]}
    assert rows[labs[0].slug]["words"] == "Passed"
    assert rows[labs[1].slug]["words"] == "Last attempt failed"
    assert rows[labs[2].slug]["words"] == "Not tried"
    assert rows[labs[3].slug]["words"] == "Being checked"


# --- One lab ----------------------------------------------------------------------


def test_a_new_lab_shows_the_prompt_with_math_and_the_starter_code(client_for, learner, lab):
    response = client_for(learner).get(f"/labs/{lab.slug}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<math" in html, "the prompt's $math$ is rendered as MathML, as on the card pages"
    textarea = re.search(r'<textarea name="code" id="lab-code"[^>]*>\n(.*?)</textarea>', html, re.S)
    assert textarea is not None
    assert textarea.group(1) == escape(lab.starter_code)
    for name in lab.tests:
        assert f"<code>{escape(name)}</code>" in html
    assert 'id="lab-result"' not in html
    assert "None yet" in text_of(response)
    assert 'src="/static/js/lab.js"' in html and "css/labs.css" in html


def escape(text: str) -> str:
    from django.utils.html import escape as django_escape

    return django_escape(text)


def test_the_lab_opens_on_the_latest_submission_and_its_result(client_for, learner, lab):
    judged(learner, lab, passed=True, code="OLD = 1\n")
    latest = judged(learner, lab, passed=False, code="NEW = 2\n")
    response = client_for(learner).get(f"/labs/{lab.slug}/")
    assert response.context["code"] == "NEW = 2\n"
    assert response.context["result"]["submission"] == latest
    words = text_of(response)
    assert f"Failed: 1 of {len(lab.tests)} test" in words
    assert "expected shape (6, 8), got (8, 6)" in words
    assert "Softmax over the wrong axis" in words
    assert "hello from the learner" in words
    assert "Ran in 0.42 s." in words
    starter = client_for(learner).get(f"/labs/{lab.slug}/?starter=1")
    assert starter.context["code"] == lab.starter_code


def test_a_failed_test_shows_expected_got_input_and_hint_never_a_code(client_for, learner, lab):
    """A graded lab's real verdict, stored as the grader stores it, on the page."""
    from labs import grading
    from labs.catalogue import lab as catalogue_lab
    from tests.labs.test_catalogue import SOLUTIONS, run_with

    the_lab = catalogue_lab(lab.slug)
    calls = list(the_lab.calls(np.random.default_rng(3)))
    name = next(n for n in SOLUTIONS[lab.slug] if n != "reference")
    verdict = the_lab.judge(calls, run_with(calls, SOLUTIONS[lab.slug][name]))
    mine = judged(
        learner,
        lab,
        passed=False,
        tests=[grading._outcome(t) for t in verdict.tests],
        diagnosis=verdict.diagnosis,
    )
    response = client_for(learner).get(f"/labs/{lab.slug}/submissions/{mine.pk}/")
    words = html.unescape(text_of(response))
    failed = next(t for t in verdict.tests if not t.passed)
    for label in ("Expected", "Your code returned", "On the input", "Hint"):
        assert label in words
    assert " ".join(failed.hint.split()) in words
    assert verdict.diagnosis in words
    assert verdict.mistake and verdict.mistake not in response.content.decode()


def test_a_passed_result_lists_every_test_as_passed(client_for, learner, lab):
    mine = judged(learner, lab, passed=True)
    response = client_for(learner).get(f"/labs/{lab.slug}/submissions/{mine.pk}/")
    words = text_of(response)
    count = len(lab.tests)
    assert f"Passed: all {count} test" in words
    assert words.count(" passed") >= count
    assert "What probably happened" not in words


def test_a_sandbox_failure_says_why_and_is_not_a_verdict(client_for, learner, lab):
    mine = Submission.objects.create(
        learner=learner,
        lab=lab.slug,
        code="x = 1\n",
        status=Submission.Status.FAILED,
        diagnosis="The sandbox could not start: bwrap is missing.",
        seed=1,
    )
    words = text_of(client_for(learner).get(f"/labs/{lab.slug}/submissions/{mine.pk}/"))
    assert "could not be run" in words
    assert "Why it could not run The sandbox could not start: bwrap is missing." in words


def test_a_pending_submission_offers_to_look_again(client_for, learner, lab):
    mine = Submission.objects.create(
        learner=learner, lab=lab.slug, code="x = 1\n", status="running", seed=1
    )
    response = client_for(learner).get(f"/labs/{lab.slug}/submissions/{mine.pk}/")
    html = response.content.decode()
    assert "Running your code" in text_of(response)
    assert f'<a href="/labs/{lab.slug}/submissions/{mine.pk}/">Check the result again</a>' in html
    assert 'data-status="running"' in html


def test_learner_text_is_escaped_everywhere(client_for, learner, lab):
    hostile = "</textarea><script>alert(1)</script>"
    mine = judged(learner, lab, passed=False, code=hostile, output=hostile, diagnosis=hostile)
    mine.tests = [{"name": "<b>n</b>", "passed": False, "message": hostile}]
    mine.save()
    client = client_for(learner)
    for path in (
        f"/labs/{lab.slug}/submissions/{mine.pk}/",
        f"/labs/{lab.slug}/submissions/{mine.pk}/result/",
    ):
        html = client.get(path).content.decode()
        assert "<script>alert(1)" not in html
        assert "&lt;/textarea&gt;&lt;script&gt;" in html


def test_long_output_is_cut_on_the_page(client_for, learner, lab):
    mine = judged(learner, lab, passed=True, output="x" * 50_000)
    response = client_for(learner).get(f"/labs/{lab.slug}/submissions/{mine.pk}/")
    assert len(response.context["result"]["output"]) == 20_000
    assert "The output was cut here" in text_of(response)


def test_the_history_lists_only_mine_newest_first_each_opening_its_code(
    client_for, learner, other_learner, lab
):
    first = judged(learner, lab, passed=False, code="FIRST = 1\n")
    second = judged(learner, lab, passed=True, code="SECOND = 2\n")
    judged(other_learner, lab, passed=True)
    client = client_for(learner)
    html = client.get(f"/labs/{lab.slug}/").content.decode()
    links = re.findall(rf'href="/labs/{lab.slug}/submissions/(\d+)/"', html)
    assert [int(pk) for pk in links] == [second.pk, first.pk]
    older = client.get(f"/labs/{lab.slug}/submissions/{first.pk}/")
    assert older.context["code"] == "FIRST = 1\n"
    assert older.context["result"]["submission"] == first
    assert (
        f'href="/labs/{lab.slug}/submissions/{first.pk}/" aria-current="page"'
        in older.content.decode()
    )


def test_the_result_partial_carries_the_status_and_is_not_cached(client_for, learner, lab):
    mine = judged(learner, lab, passed=True)
    response = client_for(learner).get(f"/labs/{lab.slug}/submissions/{mine.pk}/result/")
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    html = response.content.decode()
    assert 'id="lab-live"' in html and 'data-status="done"' in html and "<html" not in html
    assert "Your submissions" in html


def test_times_are_shown_in_the_learners_time_zone(client_for, learner, lab):
    import datetime as dt

    learner.profile.timezone = "Asia/Tokyo"
    learner.profile.save()
    mine = judged(learner, lab, passed=True)
    Submission.objects.filter(pk=mine.pk).update(
        created_at=dt.datetime(2026, 3, 1, 23, 30, tzinfo=dt.UTC)
    )
    words = text_of(client_for(learner).get(f"/labs/{lab.slug}/"))
    assert "2 Mar 2026, 08:30" in words


# --- Submitting without JavaScript ----------------------------------------------------


@pytest.fixture
def sandbox_up(monkeypatch):
    """The sandbox answers as available; no worker runs here, so nothing is graded."""
    monkeypatch.setattr("labs.grading.sandbox_unavailable", lambda: None)


@pytest.fixture
def sandbox_down(monkeypatch):
    reason = "bubblewrap (bwrap) is not installed"
    monkeypatch.setattr("labs.grading.sandbox_unavailable", lambda: reason)
    return reason


def test_submitting_saves_the_code_and_shows_its_page(client_for, learner, lab, sandbox_up):
    code = "import numpy as np\n\n\ndef f(z):\n    return z  # keeps its indentation\n"
    response = client_for(learner).post(f"/labs/{lab.slug}/", {"code": code})
    mine = Submission.objects.get(learner=learner)
    assert (mine.lab, mine.code, mine.status) == (lab.slug, code, "queued")
    assert response.status_code == 302
    assert response["Location"] == f"/labs/{lab.slug}/submissions/{mine.pk}/"
    page = client_for(learner).get(response["Location"])
    assert page.context["code"] == code
    assert "Queued" in text_of(page)
    assert "Check the result again" in text_of(page)


def test_no_sandbox_is_a_503_that_says_why_and_keeps_the_code(
    client_for, learner, lab, sandbox_down
):
    code = "def f(z):\n    return z\n"
    response = client_for(learner).post(f"/labs/{lab.slug}/", {"code": code})
    assert response.status_code == 503
    assert "cannot be run right now. Bubblewrap (bwrap) is not installed. Nothing" in text_of(
        response
    )
    assert "your code is kept below" in text_of(response)
    assert response.context["code"] == code
    assert escape(code) in response.content.decode()
    assert not Submission.objects.exists()


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("", "the editor is empty"),
        ("x" * (LIMIT + 1), "at most 65,536 bytes"),
        ("   \n", "empty"),
        ("x = 1\x00", "Null characters"),
    ],
)
def test_refused_code_is_a_400_naming_the_code_and_saves_nothing(
    client_for, learner, lab, sandbox_up, code, words
):
    response = client_for(learner).post(f"/labs/{lab.slug}/", {"code": code})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'aria-invalid="true" aria-describedby="lab-code-error"' in html
    error = re.search(r'<ul class="errorlist" id="lab-code-error">(.*?)</ul>', html, re.S)
    assert error is not None and words in error.group(1)
    assert response.context["code"] == code
    assert not Submission.objects.exists()


def test_a_post_without_the_csrf_token_is_refused(client_for, learner, lab, sandbox_up):
    response = client_for(learner, csrf=True).post(f"/labs/{lab.slug}/", {"code": "x = 1"})
    assert response.status_code == 403
    assert not Submission.objects.exists()


@pytest.mark.parametrize(
    ("prompt", "summary"),
    [
        ("Write `f(x)`. Then test it.", "Write `f(x)`."),
        ("Write `f(x)` for one head,\n\n$$f(x) = x$$", "Write `f(x)` for one head."),
        ("# A heading\n\nFirst *line.* Second.", "First *line.*"),
        ("It ends: *do this.* Then that.", "It ends: *do this.*"),
        ("Keep $x = 1.5$ whole. Next.", "Keep $x = 1.5$ whole."),
        ("", ""),
    ],
)
def test_the_list_says_what_a_lab_asks_in_its_first_sentence(prompt, summary):
    from labs.views import lab_summary

    assert lab_summary(prompt) == summary


@pytest.mark.skipif(
    "lab-page" not in WEB_FORM_SCOPES,
    reason='the lab form is limited once studyapp.throttling.WEB_FORM_SCOPES has "lab-page"',
)
def test_the_lab_form_shares_the_submission_limit(client_for, learner, lab, sandbox_up, limits):
    limits(lab_submit="1/minute")
    client = client_for(learner)
    assert client.post(f"/labs/{lab.slug}/", {"code": "x = 1\n"}).status_code == 302
    response = client.post(f"/labs/{lab.slug}/", {"code": "x = 2\n"})
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert Submission.objects.count() == 1
