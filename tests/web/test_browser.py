"""The learner journey in headless Chromium, plus every page at a phone's width.

Screenshots land in artifacts/screenshots/ for a person to look at.
"""

from __future__ import annotations

import datetime as dt
import re

import numpy as np
import pytest
import time_machine
from django.utils import timezone

from cards.models import Card, ReviewLog
from exercises import engine
from exercises import services as exercise_services
from exercises.cells import cell_words
from exercises.models import Exercise

from .conftest import PAGE_ERRORS, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def expected_answers(exercise: Exercise) -> dict[str, np.ndarray]:
    """The engine's own answer for an attention exercise, from its inputs alone."""
    inputs = exercise.inputs
    mask = np.asarray(inputs["mask"], dtype=bool)
    trace = engine.scaled_dot_product_attention(
        np.asarray(inputs["Q"], dtype=float),
        np.asarray(inputs["K"], dtype=float),
        np.asarray(inputs["V"], dtype=float),
        mask=mask if mask.any() else None,
        scale=inputs.get("scale", True),
        return_intermediates=True,
    )
    return {"scores": trace.scores, "weights": trace.weights, "output": trace.output}


def fill_grid(page, answers: dict[str, np.ndarray]) -> None:
    for part, matrix in answers.items():
        for (r, c), value in np.ndenumerate(matrix):
            page.get_by_label(cell_words(part, (r, c)), exact=True).fill(f"{value:.4f}")


def table_rows(page, table_id: str) -> list[list[str]]:
    return page.eval_on_selector_all(
        f"#{table_id} tbody tr",
        "rows => rows.map(r => Array.from(r.querySelectorAll('td')).map(td => td.textContent.trim()))",
    )


def test_learner_journey(live_server, page, deck, screenshot):
    base = live_server.url

    # Sign up.
    page.goto(f"{base}/signup/")
    page.get_by_label("Username").fill("erin")
    page.get_by_label("Password", exact=True).fill("a-long-pass-phrase-7")
    page.get_by_label("Password confirmation").fill("a-long-pass-phrase-7")
    page.get_by_label("Time zone").select_option("UTC")
    page.get_by_role("button", name="Sign up").click()
    page.wait_for_url(f"{base}/")
    assert "Welcome, erin" in page.inner_text(".messages")

    # Enrol in the deck.
    page.get_by_role("button", name="Enrol in Attention basics").click()
    page.wait_for_url(f"{base}/")
    assert "2 new cards" in page.inner_text(".messages")
    screenshot(page, "01-dashboard-enrolled")

    # Travel to the next study day: the live server's thread sees the same clock.
    with time_machine.travel(timezone.now() + dt.timedelta(days=1, hours=1), tick=True):
        page.goto(f"{base}/review/")
        assert page.inner_text("#review-progress") == "Card 1 of 2"
        assert page.is_visible("math")
        assert not page.is_visible("#answer-body")
        screenshot(page, "02-review-prompt")

        page.keyboard.press("Space")
        page.wait_for_selector("#answer-body", state="visible")
        assert "one-hot" in page.inner_text("#answer-body")
        screenshot(page, "03-review-answer")
        page.keyboard.press("2")
        page.wait_for_selector("text=Card 2 of 2")
        page.wait_for_load_state()  # the next page's scripts have run
        recall = deck.cards.get(key="why-scale")
        log = ReviewLog.objects.get(card=recall)
        assert (log.result, log.step_after, log.interval_days) == ("pass", 1, 3)

        # The exercise card: its exercise is inline; the first submission records the review.
        exercise = Exercise.objects.get(pk=page.get_attribute("[data-exercise]", "data-exercise"))
        fill_grid(page, expected_answers(exercise))
        screenshot(page, "04-review-exercise-filled")
        page.get_by_role("button", name="Check answers").click()
        page.wait_for_selector("#exercise-feedback")
        assert "Correct!" in page.inner_text("#exercise-feedback")
        assert "Review recorded as Good" in page.inner_text(".messages")
        heat = table_rows(page, "weights-heatmap")
        assert len(heat) == exercise.asks[1]["shape"][0]
        assert all(abs(sum(float(v) for v in row) - 1) < 0.01 for row in heat)
        screenshot(page, "05-exercise-solved")
        card = deck.cards.get(kind=Card.Kind.EXERCISE)
        assert ReviewLog.objects.get(card=card).result == "pass"

        page.get_by_role("link", name="Continue reviewing").click()
        page.wait_for_selector("text=All done for today")


def test_every_page_at_phone_width(live_server, phone, deck, learner, screenshot):
    base = live_server.url
    phone.goto(f"{base}/")
    screenshot(phone, "phone-landing")
    log_in(phone.context, live_server, learner)
    phone.goto(f"{base}/")
    phone.get_by_role("button", name="Enrol in Attention basics").click()
    phone.wait_for_url(f"{base}/")
    learner.review_states.update(due_on=dt.date(2000, 1, 1))
    exercise = exercise_services.exercise_create(owner=learner, kind="attention", params={"n": 3})
    pages = {
        "dashboard": "/",
        "review": "/review/",
        "exercises": "/exercises/",
        "exercise": f"/exercises/{exercise.pk}/",
        "playground": "/playground/",
        "profile": "/profile/",
    }
    for name, path in pages.items():
        phone.goto(f"{base}{path}")
        # Nothing may push the page sideways: wide tables scroll inside their panel.
        overflow = phone.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{name} is {overflow}px wider than the phone"
        screenshot(phone, f"phone-{name}")


def test_a_wrong_cell_is_marked_for_eyes_and_screen_readers(live_server, page, learner, screenshot):
    base = live_server.url
    log_in(page.context, live_server, learner)
    # A wrong answer on a practice exercise: the wrong cell is marked.
    practice = exercise_services.exercise_create(
        owner=learner, kind="attention", params={"n": 2, "seed": 7}
    )
    page.goto(f"{base}/exercises/{practice.pk}/")
    answers = expected_answers(practice)
    answers["weights"] = answers["weights"].copy()
    answers["weights"][0, 1] += 0.5
    fill_grid(page, answers)
    page.get_by_role("button", name="Check answers").click()
    page.wait_for_selector("#exercise-feedback")
    wrong = page.get_by_label("weights row 1 column 2", exact=True)
    assert wrong.get_attribute("aria-invalid") == "true"
    assert (
        page.get_by_label("weights row 1 column 1", exact=True).get_attribute("aria-invalid")
        is None
    )
    screenshot(page, "06-exercise-wrong-cell")


def test_playground_updates_live(live_server, page, learner, screenshot):
    from playwright.sync_api import expect

    base = live_server.url
    log_in(page.context, live_server, learner)
    # The playground: pick a preset, then toggle the causal mask and watch the weights.
    page.goto(f"{base}/playground/")
    page.get_by_role("button", name="A / B / C, identity").click()
    page.wait_for_url(re.compile(r".*preset=abc"))
    assert table_rows(page, "weights-table")[2] == ["0.248", "0.248", "0.503"]
    page.get_by_label("Causal mask").check()
    # Locator assertions, not wait_for_function: the site's CSP forbids eval().
    expect(page.locator("#weights-table tbody tr td").first).to_have_text("1")
    rows = table_rows(page, "weights-table")
    assert rows[0] == ["1", "0", "0"]
    assert rows[2] == ["0.248", "0.248", "0.503"]  # the last row sees every key
    # An inconsistent shape is reported inline by the API, not as a broken page.
    page.get_by_label("V row 1 column 1", exact=True).fill("oops")
    page.wait_for_selector("#pg-error li")
    assert "V row 1, column 1" in page.inner_text("#pg-error")
    page.get_by_label("V row 1 column 1", exact=True).fill("1")
    page.locator("#K-cols").fill("3")
    page.wait_for_selector("#pg-error li:has-text('K')")
    screenshot(page, "07-playground-error")
    page.locator("#K-cols").fill("2")
    expect(page.locator("#pg-error")).to_have_text("")
    screenshot(page, "08-playground-causal")


def test_an_uncaught_script_error_fails_the_test_that_met_it(live_server, page):
    page.goto(f"{live_server.url}/")
    page.evaluate("setTimeout(() => { throw new Error('thrown on purpose'); }, 0)")
    for _ in range(100):
        if PAGE_ERRORS:
            break
        page.wait_for_timeout(50)
    assert len(PAGE_ERRORS) == 1 and "thrown on purpose" in PAGE_ERRORS[0]
    assert PAGE_ERRORS[0].startswith(f"{live_server.url}/: ")
    PAGE_ERRORS.clear()  # met on purpose: the watch would fail this test otherwise
