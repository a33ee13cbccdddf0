"""After a wrong answer, in headless Chromium at a phone's and a laptop's width: the hint
shows; once the attempts run out (or the answer is right) the worked solution's steps
show, the first wrong one flagged in words; the page stays axe-clean."""

from __future__ import annotations

import numpy as np
import pytest

from exercises import services as exercise_services
from exercises.cells import cell_words
from exercises.models import Exercise

from .conftest import WIDTHS, axe_check, log_in, open_view

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(params=list(WIDTHS))
def view(request, browser):
    yield from open_view(browser, request.param, WIDTHS[request.param], service_workers="block")


def _fill(page, part: str, values) -> None:
    for index, value in np.ndenumerate(np.asarray(values, dtype=float)):
        page.get_by_label(cell_words(part, index), exact=True).fill(f"{value:.4f}")


def _answer(page, answers) -> None:
    for part, values in answers.items():
        _fill(page, part, values)
    page.get_by_role("button", name="Check answers").click()
    page.wait_for_selector("#exercise-feedback")


def test_a_wrong_answer_shows_the_hint_then_the_worked_steps(
    live_server, view, learner, axe, screenshot
):
    exercise = exercise_services.exercise_create(
        owner=learner, kind="attention", params={"mask": "causal", "seed": 7}
    )
    solution = exercise.solution
    wrong = {**solution, "scores": (np.asarray(solution["scores"]) + 1).tolist()}
    log_in(view.context, live_server, learner)
    view.goto(f"{live_server.url}/exercises/{exercise.pk}/")
    assert view.locator("#worked-solution").count() == 0
    _answer(view, wrong)
    hint = view.inner_text("#exercise-hint")
    assert hint.startswith("Hint for scores:") and "dot product of row i of Q" in hint
    assert view.locator("#worked-solution").count() == 0  # no solution before the last try
    axe_check(axe, screenshot, view, f"worked-01-hint-{view.width_name}", "exercise hint")
    for _ in range(exercise.max_attempts - 1):
        _answer(view, wrong)
    view.wait_for_selector("#worked-solution")
    steps = view.locator("#worked-solution li.step")
    names = [steps.nth(i).get_attribute("id") for i in range(steps.count())]
    assert names[:3] == ["step-raw_scores", "step-scores", "step-masked"]
    assert "step-softmax_row_1" in names and names[-1] == "step-output"
    flagged = view.locator("#worked-solution li.first-wrong")
    assert flagged.count() == 1 and flagged.get_attribute("id") == "step-scores"
    assert "Your first wrong step:" in flagged.inner_text()
    assert "−∞" in view.inner_text("#step-masked")  # a blocked score, in words and sign
    assert "(a 3 × 3 matrix)" in view.inner_text("#step-scores h3")
    axe_check(axe, screenshot, view, f"worked-02-steps-{view.width_name}", "worked solution")


def test_a_right_answer_shows_the_steps_with_none_flagged(live_server, page, learner):
    exercise = exercise_services.exercise_create(owner=learner, kind="causal", params={"seed": 3})
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/exercises/{exercise.pk}/")
    _answer(page, exercise.solution)
    assert "Correct!" in page.inner_text("#exercise-feedback")
    assert page.locator("#exercise-hint").count() == 0
    page.wait_for_selector("#worked-solution")
    assert page.locator("#worked-solution li.first-wrong").count() == 0
    assert page.locator("#step-softmax_row_3").count() == 1
    assert Exercise.objects.get(pk=exercise.pk).solved
