"""Every learner page and state passes axe-core at WCAG 2.2 AA, at desktop and phone widths.

axe-core runs inside headless Chromium (axe-playwright-python ships the script);
each checked state is also saved as a screenshot in artifacts/screenshots/.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from django.utils import timezone

from cards import services as card_services
from exercises import services as exercise_services
from exercises.cells import cell_name
from exercises.kinds import KINDS
from exercises.models import Exercise

from .conftest import WIDTHS, axe_check, log_in, open_view, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(params=list(WIDTHS))
def view(request, browser):
    """A page at one of the two widths; the pages' offline side is tested elsewhere."""
    yield from open_view(browser, request.param, WIDTHS[request.param], service_workers="block")


@pytest.fixture
def check(axe, screenshot):
    """Run axe on the page as it stands, save a screenshot, and fail on any violation."""

    def run(page, name: str) -> None:
        axe_check(axe, screenshot, page, f"a11y-{name}-{page.width_name}", name)

    return run


def _zeros(shape) -> object:
    return np.zeros(shape).tolist() if shape else 0.0


def _fill(page, exercise: Exercise, answers: dict) -> None:
    for ask in exercise.asks:
        part, shape = ask["name"], ask["shape"]
        value = np.asarray(answers[part], dtype=float)
        if not shape:
            page.locator(f"[name='{cell_name(part)}']").fill(f"{float(value):.4f}")
            continue
        for index, number in np.ndenumerate(value.reshape(shape)):
            page.locator(f"[name='{cell_name(part, index)}']").fill(f"{number:.4f}")


def test_signed_out_pages(live_server, view, check):
    base = live_server.url
    view.goto(f"{base}/")
    check(view, "landing")
    view.goto(f"{base}/login/")
    check(view, "login")
    view.get_by_label("Username").fill("nobody")
    view.get_by_label("Password").fill("wrong-password")
    view.get_by_role("button", name="Log in").click()
    view.wait_for_selector("[role=alert]")
    check(view, "login-errors")
    view.goto(f"{base}/signup/")
    check(view, "signup")
    view.get_by_label("Username").fill("x")
    view.get_by_label("Password", exact=True).fill("short")
    view.get_by_label("Password confirmation").fill("other")
    view.get_by_role("button", name="Sign up").click()
    view.wait_for_selector(".errorlist")
    check(view, "signup-errors")


def test_dashboard_review_and_profile(live_server, view, check, deck, learner):
    base = live_server.url
    log_in(view.context, live_server, learner)
    view.goto(f"{base}/")
    check(view, "dashboard-new")
    view.get_by_role("button", name="Enrol in Attention basics").click()
    view.wait_for_url(f"{base}/")
    check(view, "dashboard-enrolled")
    learner.review_states.update(due_on=timezone.localdate() - dt.timedelta(days=3))
    # Some history, so the calendar shows every level.
    view.goto(f"{base}/review/")
    check(view, "review-front")
    view.get_by_text("Show answer").click()
    view.wait_for_selector("#answer-body", state="visible")
    check(view, "review-back")
    view.get_by_role("button", name="Good").click()
    view.wait_for_selector("[data-exercise]")
    check(view, "review-exercise")
    exercise = Exercise.objects.get(pk=view.get_attribute("[data-exercise]", "data-exercise"))
    _fill(view, exercise, {a["name"]: _zeros(a["shape"]) for a in exercise.asks})
    view.get_by_role("button", name="Check answers").click()
    view.wait_for_selector("#exercise-feedback")
    check(view, "review-exercise-wrong")
    view.get_by_role("link", name="Continue reviewing").click()
    view.wait_for_selector("h1:has-text('All done')")
    check(view, "review-done")
    view.goto(f"{base}/")
    check(view, "dashboard-reviewed")
    view.goto(f"{base}/profile/")
    check(view, "profile")
    view.get_by_label("Email").fill("not-an-address")
    view.get_by_role("button", name="Save profile").click()
    view.wait_for_selector(".errorlist")
    check(view, "profile-errors")


def test_review_exercise_right(live_server, view, check, deck, learner):
    base = live_server.url
    log_in(view.context, live_server, learner)
    card_services.enroll(learner=learner, deck=deck, at=timezone.now())
    learner.review_states.filter(card__kind="recall").delete()
    learner.review_states.update(due_on=timezone.localdate() - dt.timedelta(days=1))
    view.goto(f"{base}/review/")
    exercise = Exercise.objects.get(pk=view.get_attribute("[data-exercise]", "data-exercise"))
    _fill(view, exercise, exercise.solution)
    view.get_by_role("button", name="Check answers").click()
    view.wait_for_selector("#exercise-feedback")
    assert "Correct" in view.inner_text("#exercise-feedback")
    check(view, "review-exercise-right")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_exercise_kind_new_and_closed(live_server, view, check, learner, kind):
    base = live_server.url
    log_in(view.context, live_server, learner)
    exercise = exercise_services.exercise_create(owner=learner, kind=kind, params={})
    view.goto(f"{base}/exercises/{exercise.pk}/")
    check(view, f"exercise-{kind}-new")
    # Closed: every attempt used on wrong answers, so the solution and heat map show.
    # A part answered with a choice (the ablation verdict) takes one of its choices.
    zeros = {
        a["name"]: a["choices"][0] if a.get("choices") else _zeros(a["shape"])
        for a in exercise.asks
    }
    for _ in range(exercise.max_attempts):
        exercise_services.attempt_submit(
            owner=learner, exercise_id=exercise.pk, answers=zeros, at=timezone.now()
        )
    view.reload()
    view.wait_for_selector("#exercise-feedback")
    check(view, f"exercise-{kind}-closed")


def test_exercise_list_and_playground(live_server, view, check, learner):
    base = live_server.url
    log_in(view.context, live_server, learner)
    view.goto(f"{base}/exercises/")
    check(view, "exercises-empty")
    for kind in ("attention", "multi_head"):
        exercise_services.exercise_create(owner=learner, kind=kind, params={})
    view.goto(f"{base}/exercises/")
    check(view, "exercises")
    view.goto(f"{base}/playground/?preset=abc")
    # A preset asks a prediction first; the weights show once it is committed.
    view.wait_for_selector("#pg-predict", state="visible")
    check(view, "playground-predict")
    view.locator("input[name='pg-prediction']").first.check()
    view.get_by_role("button", name="Commit and show the weights").click()
    view.wait_for_selector("#weights-table", state="visible")
    check(view, "playground")
    view.get_by_label("V row 1 column 1", exact=True).fill("oops")
    view.wait_for_selector("#pg-error li")
    check(view, "playground-error")


def test_after_a_submit_focus_is_on_the_result_and_answers_may_be_negative(
    live_server, view, learner
):
    log_in(view.context, live_server, learner)
    exercise = exercise_services.exercise_create(
        owner=learner, kind="attention", params={"n": 2, "seed": 3}
    )
    view.goto(f"{live_server.url}/exercises/{exercise.pk}/")
    cell = view.get_by_label("scores row 1 column 1", exact=True)
    # The keyboard offered is a text one (it has a minus sign), and "-0.5" is well formed.
    assert cell.get_attribute("inputmode") == "text"
    cell.fill("-0.5")
    assert cell.evaluate("input => input.validity.valid")
    cell.fill("−1.25")
    assert cell.evaluate("input => input.validity.valid")
    cell.fill("0.5x")
    assert cell.evaluate("input => input.validity.patternMismatch")
    _fill(view, exercise, {a["name"]: _zeros(a["shape"]) for a in exercise.asks})
    cell.fill("-0.5")
    view.get_by_role("button", name="Check answers").click()
    view.wait_for_selector("#exercise-feedback")
    wait_until(view, "document.activeElement.id === 'exercise-feedback'")
    attempt = exercise.attempt_set.get()
    assert attempt.answers["scores"][0][0] == -0.5
    # Cells that are not numbers: focus goes to the list of problems instead.
    _fill(view, exercise, {a["name"]: _zeros(a["shape"]) for a in exercise.asks})
    cell.fill("abc")
    view.get_by_role("button", name="Check answers").click()
    view.wait_for_selector("#answer-problems")
    wait_until(view, "document.activeElement.id === 'answer-problems'")
