"""Predict first and the ablation test, driven in headless Chromium."""

from __future__ import annotations

import re

import numpy as np
import pytest
from django.test import Client

from exercises import services as exercise_services
from exercises.cells import cell_words
from exercises.models import Exercise, Prediction

from .conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _log_in(context, live_server, user) -> None:
    client = Client()
    client.force_login(user)
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )


def _fill(page, part: str, values) -> None:
    arr = np.asarray(values, dtype=float)
    for index, value in np.ndenumerate(arr):
        page.get_by_label(cell_words(part, index), exact=True).fill(f"{value:.4f}")


def test_exercise_asks_the_prediction_before_the_numbers(live_server, page, learner, screenshot):
    exercise = exercise_services.exercise_create(
        owner=learner, kind="causal", params={"predict": "token_0", "seed": 5}
    )
    _log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/exercises/{exercise.pk}/")
    assert page.locator("#answer-form").count() == 0
    assert page.is_visible("#numbers-closed")
    page.get_by_label("only itself").check()
    screenshot(page, "predict-01-before")
    page.get_by_role("button", name="Commit to this prediction").click()
    page.wait_for_selector("#answer-form")
    assert "You predicted only itself" in page.inner_text("#prediction-made")
    assert Prediction.objects.get(exercise=exercise).answer == "only itself"
    assert Exercise.objects.get(pk=exercise.pk).attempts_used == 0

    _fill(page, "weights", exercise.solution["weights"])
    page.get_by_role("button", name="Check answers").click()
    page.wait_for_selector("#prediction-verdict")
    assert "the numbers agree" in page.inner_text("#prediction-verdict")
    assert "Correct!" in page.inner_text("#exercise-feedback")
    screenshot(page, "predict-02-after")


def test_ablation_page_takes_numbers_and_a_verdict(live_server, page, learner, screenshot):
    exercise = exercise_services.exercise_create(
        owner=learner, kind="ablation", params={"seed": 12, "case": "redundant"}
    )
    solution = exercise.solution
    _log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/exercises/{exercise.pk}/")
    for part in ("weights", "p_with", "p_without", "change"):
        _fill(page, part, solution[part])
    # The trap: the highlighted token's weight is high, so "reliance" is tempting.
    page.get_by_role("radio", name="reliance").check()
    page.get_by_role("button", name="Check answers").click()
    page.wait_for_selector("#exercise-feedback")
    feedback = page.inner_text("#exercise-feedback")
    assert "Not quite" in feedback
    screenshot(page, "ablation-01-wrong-verdict")
    page.get_by_role("radio", name="redundant").check()
    page.get_by_role("button", name="Check answers").click()
    wait_until(
        page,
        "(document.querySelector('#exercise-feedback h2')?.textContent || '').includes('Correct')",
    )
    assert Exercise.objects.get(pk=exercise.pk).solved
    screenshot(page, "ablation-02-solved")


def test_playground_preset_hides_the_weights_until_the_prediction(
    live_server, page, learner, screenshot
):
    _log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/playground/")
    page.get_by_role("button", name="Causal mask").click()
    page.wait_for_url(re.compile(r".*preset=causal"))
    page.wait_for_selector("#pg-predict", state="visible")
    assert not page.is_visible("#weights-table")
    page.get_by_role("button", name="Commit and show the weights").click()
    assert "Choose one answer" in page.inner_text("#pg-predict-verdict")
    page.get_by_label("every token equally").check()
    page.get_by_role("button", name="Commit and show the weights").click()
    page.wait_for_selector("#weights-table", state="visible")
    verdict = page.inner_text("#pg-predict-verdict")
    assert "Wrong" in verdict and "only itself" in verdict
    rows = page.eval_on_selector_all(
        "#weights-table tbody tr",
        "rows => rows.map(r => Array.from(r.querySelectorAll('td')).map(td => td.textContent.trim()))",
    )
    assert rows[0] == ["1", "0", "0"]
    made = Prediction.objects.get(owner=learner)
    assert (made.ask, made.answer, made.correct) == (
        "playground:causal",
        "every token equally",
        False,
    )
    screenshot(page, "predict-03-playground")
