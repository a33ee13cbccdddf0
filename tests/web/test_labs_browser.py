"""The lab pages in headless Chromium: axe at WCAG 2.2 AA, the editor's keys, submitting.

Every state is checked at a phone's width (390 px) and a desktop's (1280 px), and saved as
artifacts/screenshots/a11y-lab-<state>-<phone|desktop>.png. No learner code runs: the
sandbox is reported available or not, no worker grades, and results are written to the
database in the states the grader leaves them.
"""

from __future__ import annotations

import pytest

from labs import selectors
from labs.models import Submission

from .conftest import STATE_TIMEOUT_MS, axe_check, log_in, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
REASON = "bubblewrap (bwrap) is not installed"


def _context(browser, width: str, *, javascript: bool = True):
    phone = width == "phone"
    context = browser.new_context(
        viewport=WIDTHS[width],
        device_scale_factor=2 if phone else 1,
        is_mobile=phone,
        has_touch=phone,
        java_script_enabled=javascript,
    )
    context.set_default_timeout(STATE_TIMEOUT_MS)
    return context


@pytest.fixture(params=list(WIDTHS))
def view(request, browser):
    context = _context(browser, request.param)
    page = context.new_page()
    page.width_name = request.param
    yield page
    context.close()


@pytest.fixture
def check(axe, screenshot):
    """axe and the heading order on the page as it stands, nothing wider than the screen."""

    def run(page, name: str) -> None:
        axe_check(axe, screenshot, page, f"a11y-lab-{name}-{page.width_name}", name)
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, f"{name} is {overflow} px wider than the {page.width_name} screen"

    return run


@pytest.fixture
def lab():
    return next(iter(selectors.labs_list()))


@pytest.fixture
def sandbox_up(monkeypatch):
    monkeypatch.setattr("labs.grading.sandbox_unavailable", lambda: None)


@pytest.fixture
def sandbox_down(monkeypatch):
    monkeypatch.setattr("labs.grading.sandbox_unavailable", lambda: REASON)


def failed_result(learner, lab) -> Submission:
    tests = [
        {
            "name": name,
            "passed": i % 2 == 1,
            "message": "ok"
            if i % 2
            else "expected shape (6, 8), got (8, 6); first wrong entry [0, 3]: expected "
            "0.125730981, got 0.982341772 (a long message wraps on a phone)",
            **(
                {}
                if i % 2
                else {
                    "expected": "[[0.1257, 0.2   , 0.6743],\n [0.3333, 0.3333, 0.3333]]",
                    "got": "an ndarray of shape (50, 64) (float64); its first entries: "
                    "0, 1, 0, 1, 0, 1, …",
                    "input": "z = [[ 1.2041, -0.3317,  2.9005,  0.1234,  5.5555, -7.7777]]",
                    "hint": "Subtract each row's maximum, take exp(), divide by the row's sum.",
                    "mistake": "softmax_over_queries",
                }
            ),
        }
        for i, name in enumerate(lab.tests)
    ]
    output = "".join(f"step {i}: {'x' * 150}\n" for i in range(80))
    return Submission.objects.create(
        learner=learner,
        lab=lab.slug,
        code="import numpy as np\n\n\ndef softmax(z):\n    return np.exp(z) / np.exp(z).sum(axis=0)\n",
        status=Submission.Status.DONE,
        passed=False,
        tests=tests,
        diagnosis="Softmax over the wrong axis: each column sums to 1 instead of each row.",
        output=output,
        duration_ms=1234,
        seed=1,
    )


def passed_result(learner, lab) -> Submission:
    return Submission.objects.create(
        learner=learner,
        lab=lab.slug,
        code="import numpy as np\n",
        status=Submission.Status.DONE,
        passed=True,
        tests=[{"name": name, "passed": True, "message": "ok"} for name in lab.tests],
        output="",
        duration_ms=310,
        seed=1,
    )


# --- axe, at both widths ------------------------------------------------------------


def test_the_list_and_each_state_of_a_lab_pass_axe(live_server, view, check, learner, lab):
    base = live_server.url
    log_in(view.context, live_server, learner)
    view.goto(f"{base}/labs/")
    check(view, "list-new")
    view.goto(f"{base}/labs/{lab.slug}/")
    view.wait_for_selector(".code-gutter")
    check(view, "empty")
    passed = passed_result(learner, lab)
    view.goto(f"{base}/labs/{lab.slug}/submissions/{passed.pk}/")
    check(view, "passed")
    failed = failed_result(learner, lab)
    view.goto(f"{base}/labs/{lab.slug}/submissions/{failed.pk}/")
    assert view.locator(".lab-output").evaluate("e => e.scrollHeight > e.clientHeight")
    check(view, "failed")
    view.goto(f"{base}/labs/")
    check(view, "list-tried")


def test_a_lab_due_in_the_review_and_its_recorded_review_pass_axe(
    live_server, view, check, learner, lab
):
    from django.utils import timezone

    from cards import selectors as card_selectors
    from cards import services as card_services
    from cards.models import Card, Deck, ReviewState
    from cards.services.lab_reviews import lab_graded, lab_submitted

    deck = Deck.objects.create(slug="lab-deck", title="Lab deck")
    Card.objects.create(deck=deck, kind="lab", lab=lab.slug, prompt="Write it.")
    now = timezone.now()
    card_services.enroll(learner=learner, deck=deck, at=now)
    today = card_selectors.learner_today(learner=learner, at=now)
    ReviewState.objects.filter(learner=learner).update(due_on=today)
    log_in(view.context, live_server, learner)
    view.goto(f"{live_server.url}/labs/{lab.slug}/")
    view.wait_for_selector("#lab-review-due")
    check(view, "review-due")
    submission = passed_result(learner, lab)
    lab_submitted(learner=learner, lab_slug=lab.slug, submission_id=submission.pk, at=now)
    lab_graded(submission_id=submission.pk, passed=True, at=now)
    view.goto(f"{live_server.url}/labs/{lab.slug}/submissions/{submission.pk}/")
    view.wait_for_selector("#lab-review")
    assert view.locator("#lab-review-due").count() == 0
    check(view, "review-recorded")
    view.get_by_role("link", name="Continue reviewing").click()
    view.wait_for_url(f"{live_server.url}/review/")


def test_the_unavailable_sandbox_passes_axe_and_keeps_the_code(
    live_server, view, check, learner, lab, sandbox_down
):
    log_in(view.context, live_server, learner)
    view.goto(f"{live_server.url}/labs/{lab.slug}/")
    view.locator("#lab-code").fill("def softmax(z):\n    return z\n")
    view.get_by_role("button", name="Run the tests").click()
    view.wait_for_selector(".lab-problem")
    assert f"{REASON}. Nothing was submitted" in view.inner_text("#lab-problem")
    assert view.input_value("#lab-code") == "def softmax(z):\n    return z\n"
    check(view, "unavailable")
    assert not Submission.objects.exists()


# --- Without JavaScript -------------------------------------------------------------


def test_without_javascript_the_form_posts_and_the_page_shows_the_submission(
    live_server, browser, learner, lab, sandbox_up
):
    context = _context(browser, "desktop", javascript=False)
    page = context.new_page()
    log_in(context, live_server, learner)
    page.goto(f"{live_server.url}/labs/{lab.slug}/")
    assert page.locator(".code-gutter").count() == 0
    assert page.locator("#lab-code-keys").is_hidden()
    page.locator("#lab-code").fill("def softmax(z):\n    return z\n")
    page.get_by_role("button", name="Run the tests").click()
    mine = Submission.objects.get(learner=learner)
    page.wait_for_url(f"**/labs/{lab.slug}/submissions/{mine.pk}/")
    assert "Queued" in page.inner_text("#lab-result")
    # The grader finishes; looking again shows the verdict.
    Submission.objects.filter(pk=mine.pk).update(
        status="done",
        passed=True,
        tests=[{"name": n, "passed": True, "message": "ok"} for n in lab.tests],
    )
    page.get_by_role("link", name="Check the result again").click()
    page.wait_for_selector("#lab-result[data-status=done]")
    assert "Passed: all" in page.inner_text("#lab-headline")
    context.close()


def test_without_javascript_no_sandbox_shows_the_reason_and_keeps_the_code(
    live_server, browser, learner, lab, sandbox_down
):
    context = _context(browser, "phone", javascript=False)
    page = context.new_page()
    log_in(context, live_server, learner)
    page.goto(f"{live_server.url}/labs/{lab.slug}/")
    page.locator("#lab-code").fill("x = 1\n")
    page.get_by_role("button", name="Run the tests").click()
    page.wait_for_selector(".lab-problem")
    assert "Bubblewrap (bwrap) is not installed. Nothing" in page.inner_text("#lab-problem")
    assert page.input_value("#lab-code") == "x = 1\n"
    context.close()


# --- The editor ---------------------------------------------------------------------


def test_tab_indents_shift_tab_outdents_and_escape_then_tab_leaves(live_server, page, learner, lab):
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/labs/{lab.slug}/")
    assert page.locator("#lab-code-keys").is_visible()
    editor = page.locator("#lab-code")
    editor.fill("a = 1\nb = 2\nc = 3")
    editor.focus()
    page.evaluate("document.getElementById('lab-code').setSelectionRange(0, 0)")
    page.keyboard.press("Tab")
    assert editor.input_value() == "    a = 1\nb = 2\nc = 3"
    # A selection over the last two lines indents both, and Shift+Tab takes it back.
    page.evaluate("document.getElementById('lab-code').setSelectionRange(12, 19)")
    page.keyboard.press("Tab")
    assert editor.input_value() == "    a = 1\n    b = 2\n    c = 3"
    page.keyboard.press("Shift+Tab")
    assert editor.input_value() == "    a = 1\nb = 2\nc = 3"
    # Enter keeps the indentation, and after a colon goes one level deeper.
    page.evaluate(
        "const t = document.getElementById('lab-code'); t.value = 'def f():'; t.setSelectionRange(8, 8)"
    )
    page.keyboard.press("Enter")
    page.keyboard.type("return 1")
    assert editor.input_value() == "def f():\n    return 1"
    # Focus is still in the editor after Tab; Escape then Tab moves it on.
    assert page.evaluate("document.activeElement.id") == "lab-code"
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "lab-run"
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.id") == "lab-code"
    page.keyboard.press("Escape")
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.id") != "lab-code"
    assert editor.input_value() == "def f():\n    return 1"


def test_a_failed_test_shows_expected_got_input_and_hint_and_no_code(
    live_server, view, learner, lab
):
    log_in(view.context, live_server, learner)
    failed = failed_result(learner, lab)
    view.goto(f"{live_server.url}/labs/{lab.slug}/submissions/{failed.pk}/")
    details = view.locator(".lab-tests li.no .lab-test-details").first
    terms = details.locator("dt").all_inner_texts()
    assert terms == ["Expected", "Your code returned", "On the input", "Hint"]
    assert "0.1257" in details.inner_text() and "shape (50, 64)" in details.inner_text()
    assert "softmax_over_queries" not in view.content()
    # a value wider than a phone scrolls inside its own box; the page does not widen
    assert view.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )


def test_long_lines_wrap_on_a_phone_and_the_numbers_follow(live_server, browser, learner, lab):
    context = _context(browser, "phone")
    page = context.new_page()
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/labs/{lab.slug}/")
    page.wait_for_selector(".code-gutter")
    long_line = (
        "    return np.exp(z - z.max(axis=-1, keepdims=True)).sum(axis=-1, keepdims=True)  # end"
    )
    page.locator("#lab-code").fill(f"def f():\n{long_line}\nx = 1")
    # Nothing runs past the edge: the textarea has no hidden width to scroll to.
    assert page.evaluate(
        "(() => { const t = document.getElementById('lab-code');"
        " return t.scrollWidth <= t.clientWidth; })()"
    )
    # Each line's number sits on its first row: line 3 comes after line 2's wrapped rows.
    rows = page.inner_text(".code-gutter pre").split("\n")
    assert rows[:2] == ["1", "2"] and rows[-1] == "3" and len(rows) > 3
    assert all(row == "" for row in rows[2:-1])
    context.close()
    # On a desktop the same line stays one row, and scrolls sideways.
    wide = _context(browser, "desktop")
    page = wide.new_page()
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/labs/{lab.slug}/")
    page.wait_for_selector(".code-gutter")
    page.locator("#lab-code").fill(f"def f():\n{long_line * 3}\nx = 1")
    assert page.inner_text(".code-gutter pre").split("\n") == ["1", "2", "3"]
    assert page.evaluate(
        "(() => { const t = document.getElementById('lab-code');"
        " t.scrollLeft = 10000; return t.scrollLeft > 0; })()"
    )
    wide.close()


def test_the_line_numbers_follow_the_lines_and_the_scrolling(live_server, page, learner, lab):
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/labs/{lab.slug}/")
    editor = page.locator("#lab-code")
    editor.fill("\n".join(f"x{i} = {i}" for i in range(1, 101)))
    numbers = page.inner_text(".code-gutter pre").split()
    assert numbers == [str(i) for i in range(1, 101)]
    page.evaluate("document.getElementById('lab-code').scrollTop = 600")
    wait_until(
        page,
        "document.querySelector('.code-gutter').scrollTop === document.getElementById('lab-code').scrollTop",
    )
    assert page.evaluate("document.querySelector('.code-gutter').scrollTop") > 0
    # The gutter's rows line up with the textarea's: the same line height.
    assert page.evaluate(
        "getComputedStyle(document.querySelector('.code-gutter pre')).lineHeight"
        " === getComputedStyle(document.getElementById('lab-code')).lineHeight"
    )


# --- Submitting with JavaScript -------------------------------------------------------


def test_submitting_stays_on_the_page_polls_and_announces_the_result(
    live_server, page, learner, lab, sandbox_up
):
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/labs/{lab.slug}/")
    page.locator("#lab-code").fill("def softmax(z):\n    return z\n")
    page.get_by_role("button", name="Run the tests").click()
    wait_until(page, "document.querySelector('#lab-result[data-status=queued]') !== null")
    mine = Submission.objects.get(learner=learner)
    assert mine.code == "def softmax(z):\n    return z\n"
    assert page.url.endswith(f"/labs/{lab.slug}/submissions/{mine.pk}/")
    assert page.get_attribute("#lab-run", "aria-disabled") == "true"
    # The grader finishes; the page notices without a reload.
    failed = failed_result(learner, lab)
    Submission.objects.filter(pk=mine.pk).update(
        status="done", passed=False, tests=failed.tests, diagnosis=failed.diagnosis, output="hi\n"
    )
    failed.delete()
    wait_until(page, "document.querySelector('#lab-result[data-status=done]') !== null", 15)
    wait_until(page, "document.getElementById('lab-announce').textContent.startsWith('Failed')")
    assert "wrong axis" in page.inner_text("#lab-result")
    assert page.get_attribute("#lab-run", "aria-disabled") == "false"
    assert page.locator("#lab-history tbody tr").count() == 1
    assert page.input_value("#lab-code") == "def softmax(z):\n    return z\n"


def test_a_page_opened_on_a_running_submission_keeps_looking(live_server, page, learner, lab):
    mine = Submission.objects.create(
        learner=learner, lab=lab.slug, code="x = 1\n", status="running", seed=1
    )
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/labs/{lab.slug}/submissions/{mine.pk}/")
    assert "appears here when it is ready" in page.inner_text("#lab-pending")
    Submission.objects.filter(pk=mine.pk).update(
        status="failed", diagnosis="The sandbox stopped before the code ran."
    )
    wait_until(page, "document.querySelector('#lab-result[data-status=failed]') !== null", 15)
    wait_until(page, "document.getElementById('lab-announce').textContent.length > 0")
    assert "could not be run" in page.inner_text("#lab-announce")


def test_refused_and_throttled_submissions_say_why_and_keep_the_code(
    live_server, page, learner, lab, sandbox_up, limits
):
    limits(lab_submit="2/minute")  # the refused post counts too
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/labs/{lab.slug}/")
    page.locator("#lab-code").fill("   \n")
    page.get_by_role("button", name="Run the tests").click()
    wait_until(page, "document.querySelector('#lab-problem .lab-problem') !== null")
    assert "empty" in page.inner_text("#lab-problem")
    assert not Submission.objects.exists()
    page.locator("#lab-code").fill("x = 1\n")
    page.get_by_role("button", name="Run the tests").click()
    wait_until(page, "document.querySelector('#lab-result[data-status=queued]') !== null")
    page.locator("#lab-code").fill("x = 2\n")
    # The page stops looking at the first submission only when it is judged.
    Submission.objects.update(status="failed", diagnosis="The sandbox stopped.")
    wait_until(page, "document.getElementById('lab-run').getAttribute('aria-disabled') === 'false'")
    page.get_by_role("button", name="Run the tests").click()
    wait_until(page, "document.querySelector('#lab-problem .lab-problem') !== null")
    assert "Too many submissions in a short time. Try again in " in page.inner_text("#lab-problem")
    assert page.input_value("#lab-code") == "x = 2\n"
    assert Submission.objects.count() == 1


def test_opening_a_finished_submission_puts_focus_on_its_result(live_server, page, learner, lab):
    mine = passed_result(learner, lab)
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/labs/{lab.slug}/submissions/{mine.pk}/")
    assert page.evaluate("document.activeElement.id") == "lab-result"
    page.goto(f"{live_server.url}/labs/{lab.slug}/")
    assert page.evaluate("document.activeElement.id") != "lab-result"


# --- Through the real sandbox -----------------------------------------------------------

STABLE_SOFTMAX = """import numpy as np


def softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    print("rows:", z.shape[:-1])
    return e / e.sum(axis=-1, keepdims=True)
"""


@pytest.mark.sandbox
def test_through_the_sandbox_the_page_shows_a_failure_then_a_pass(
    live_server, page, learner, monkeypatch
):
    """The learner's code runs only in the sandbox: grading runs where the worker would,
    after the request's commit, and the page polls until the verdict is in."""
    from labs import tasks
    from tests.labs import require_sandbox

    require_sandbox()
    monkeypatch.setattr(tasks.grade_submission, "delay", tasks.grade_submission)
    softmax = selectors.lab_get("softmax")
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/labs/softmax/")
    assert page.input_value("#lab-code") == softmax.starter_code
    page.get_by_role("button", name="Run the tests").click()
    wait_until(page, "document.querySelector('#lab-result[data-status=done]') !== null", 60)
    assert "Failed" in page.inner_text("#lab-headline")
    assert "NotImplementedError" in page.inner_text("#lab-result")
    page.locator("#lab-code").fill(STABLE_SOFTMAX)
    page.get_by_role("button", name="Run the tests").click()
    wait_until(page, "document.getElementById('lab-announce').textContent.startsWith('Passed')", 60)
    assert "rows:" in page.inner_text(".lab-output")
    assert page.locator("#lab-history tbody tr").count() == 2
    page.goto(f"{live_server.url}/labs/")
    assert "Passed" in page.inner_text(".lab-list li:first-child")
