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
from cards.models import Card, ReviewLog, Tag
from exercises import services as exercise_services
from exercises.cells import cell_name
from exercises.kinds import KINDS
from exercises.models import Exercise

from .conftest import WIDTHS, assert_axe_clean, axe_check, log_in, open_view, wait_until

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


# --- Dark mode, the progress page and the admin, in both themes -----------------------

THEMES = ("light", "dark")


@pytest.fixture(
    params=[(width, theme) for theme in THEMES for width in WIDTHS],
    ids=lambda param: "-".join(param),
)
def themed(request, browser):
    """A page at one width whose device prefers one colour scheme; no service worker."""
    width, theme = request.param
    for page in open_view(
        browser, width, WIDTHS[width], service_workers="block", color_scheme=theme
    ):
        page.width_name = f"{width}-{theme}"
        page.theme = theme
        yield page


def _drawn_dark(page) -> bool:
    """Whether the page is drawn dark: the luminance of its background."""
    return page.evaluate(
        """() => {
          const rgb = getComputedStyle(document.documentElement).backgroundColor.match(/[0-9.]+/g).map(Number);
          return (0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]) < 80;
        }"""
    )


def _history(learner, deck) -> None:
    """A deck enrolled with every card placed, due today, and a week of reviews on the
    calendar: the dashboard's charts, the next steps and the progress bars all show."""
    card_services.enroll(learner=learner, deck=deck, at=timezone.now())
    today = timezone.localdate()
    learner.review_states.update(due_on=today)
    card = deck.cards.get(key="why-scale")
    for days_ago, result in ((6, "fail"), (4, "pass"), (2, "pass"), (1, "fail")):
        ReviewLog.objects.create(
            learner=learner,
            card=card,
            reviewed_at=timezone.now() - dt.timedelta(days=days_ago),
            study_day=today - dt.timedelta(days=days_ago),
            result=result,
            step_before=0,
            step_after=0,
            interval_days=1,
            due_before=today,
            due_after=today,
        )


def test_learner_pages_in_both_themes(live_server, themed, check, deck, learner):
    base = live_server.url
    page = themed
    Tag.objects.get_or_create(name="softmax")[0].cards.add(*deck.cards.all())
    _history(learner, deck)
    log_in(page.context, live_server, learner)
    page.goto(f"{base}/")
    assert page.get_attribute("html", "data-theme") == "auto"
    assert _drawn_dark(page) == (page.theme == "dark")
    page.wait_for_selector("#next-steps")
    check(page, "dashboard-themed")
    page.goto(f"{base}/progress/")
    page.wait_for_selector(".topic-bars")
    check(page, "progress")
    page.get_by_text("Progress by topic as a table").click()
    check(page, "progress-table")
    page.goto(f"{base}/review/")
    check(page, "review-front-themed")
    page.get_by_text("Show answer").click()
    page.wait_for_selector("#answer-body", state="visible")
    check(page, "review-back-themed")
    page.get_by_role("button", name="Good").click()
    page.wait_for_selector("[data-exercise]")
    check(page, "review-exercise-themed")
    exercise = exercise_services.exercise_create(owner=learner, kind="attention", params={})
    for _ in range(exercise.max_attempts):
        exercise_services.attempt_submit(
            owner=learner,
            exercise_id=exercise.pk,
            answers={a["name"]: _zeros(a["shape"]) for a in exercise.asks},
            at=timezone.now(),
        )
    page.goto(f"{base}/exercises/{exercise.pk}/")
    page.wait_for_selector("#exercise-feedback")
    check(page, "exercise-heat-map-themed")
    page.goto(f"{base}/playground/?preset=abc")
    page.wait_for_selector("#pg-results-waiting", state="visible")
    check(page, "playground-waiting-themed")
    page.locator("#pg-results-skip").click()
    page.wait_for_selector("#weights-table", state="visible")
    check(page, "playground-themed")
    page.goto(f"{base}/profile/")
    check(page, "profile-themed")
    # Chosen in the profile, the theme wins over the device's.
    other = "light" if page.theme == "dark" else "dark"
    page.locator("#theme-switch").get_by_role("button", name=other.title()).click()
    page.wait_for_selector(f"html[data-theme='{other}']")
    assert _drawn_dark(page) == (other == "dark")
    check(page, f"profile-{other}-chosen")
    page.goto(f"{base}/")
    check(page, f"dashboard-{other}-chosen")


def test_admin_pages_in_both_themes(live_server, themed, axe, screenshot, deck, learner, staff):
    base = live_server.url
    page = themed
    _history(learner, deck)
    # A list as long as the starter deck's, with tags to filter by.
    cards = Card.objects.bulk_create(
        Card(deck=deck, key=f"extra-{i}", prompt=f"Card {i}", position=10 + i) for i in range(70)
    )
    for name in ("softmax", "masks", "shapes"):
        Tag.objects.create(name=name).cards.add(*cards[:20])
    staff.is_superuser = True  # every screen, not only those staff may view
    staff.save(update_fields=["is_superuser"])
    log_in(page.context, live_server, staff)
    pages = [
        ("admin-index", "/admin/"),
        ("admin-deck", f"/admin/cards/deck/{deck.pk}/change/"),
        ("admin-cards", "/admin/cards/card/"),
        ("admin-card", f"/admin/cards/card/{deck.cards.first().pk}/change/"),
        ("admin-item-analysis", "/admin/cards/cardanalysis/"),
        ("admin-item-kinds", "/admin/cards/cardanalysis/kinds/"),
        ("admin-logs", "/admin/cards/reviewlog/"),
        ("admin-lesson-sections", "/admin/cards/lessonsection/"),
        ("admin-lesson-section-add", "/admin/cards/lessonsection/add/"),
    ]
    for name, path in pages:
        response = page.goto(f"{base}{path}")
        assert response.status == 200, path
        # axe alone: the headings are the admin's own (its widgets start at h4 and h3).
        screenshot(page, f"a11y-{name}-{page.width_name}")
        assert_axe_clean(axe, page, name)
        # Nothing wider than the screen: wide tables scroll in their own box.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), (
            f"{path} is wider than the screen at {page.width_name}"
        )
