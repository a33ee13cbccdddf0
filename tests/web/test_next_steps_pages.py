"""What next, progress by topic, the theme, and the small things of a learner's first week,
in a real browser: the dashboard's and the "All done" page's next steps, the progress page,
the theme switch and the device's colour scheme, keyboard hints only where a keyboard is,
the review counter offline, the offline page after signing out, the playground's wait."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from cards import services as card_services
from cards.models import Card, LessonSection, ReviewLog, ReviewState, Tag
from labs.models import Submission

from .conftest import go_offline, log_in, open_view, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _dark(page) -> bool:
    return page.evaluate(
        """() => {
          const rgb = getComputedStyle(document.documentElement).backgroundColor.match(/[0-9.]+/g).map(Number);
          return (0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]) < 80;
        }"""
    )


@pytest.fixture
def first_week(deck, learner):
    """The small deck with a lesson, a lab card and an interview card, enrolled, with a
    few misses on the masks section's cards."""
    LessonSection.objects.create(deck=deck, key="masks", title="Masks", body="Masks.", position=1)
    deck.cards.filter(key="why-scale").update(lesson_section="masks")
    Card.objects.create(
        deck=deck, key="lab", kind=Card.Kind.LAB, lab="softmax", prompt="Lab", position=3
    )
    Card.objects.create(
        deck=deck, key="talk", kind=Card.Kind.INTERVIEW, prompt="Explain **masks**.", position=4
    )
    softmax = Tag.objects.create(name="softmax")
    softmax.cards.add(*deck.cards.all())
    card_services.enroll(learner=learner, deck=deck, at=timezone.now())
    today = timezone.localdate()
    learner.review_states.update(due_on=today + dt.timedelta(days=2))
    card = deck.cards.get(key="why-scale")
    for days_ago in (1, 2):
        ReviewLog.objects.create(
            learner=learner,
            card=card,
            reviewed_at=timezone.now() - dt.timedelta(days=days_ago),
            study_day=today - dt.timedelta(days=days_ago),
            result="fail",
            step_before=0,
            step_after=0,
            interval_days=1,
            due_before=today,
            due_after=today,
        )
    return deck


def _steps(page) -> dict[str, tuple[str, str]]:
    return {
        item.get_attribute("data-step"): (
            item.inner_text().strip(),
            item.locator("a").get_attribute("href"),
        )
        for item in page.locator("#next-steps li[data-step]").all()
    }


def test_the_dashboard_and_all_done_page_say_what_next(live_server, page, first_week, learner):
    base = live_server.url
    log_in(page.context, live_server, learner)
    page.goto(f"{base}/")
    steps = _steps(page)
    assert set(steps) == {"reviews", "lesson", "lab", "exercise", "interview"}
    day = timezone.localdate() + dt.timedelta(days=2)
    assert steps["reviews"] == (
        f"Next reviews: 4 cards on {day:%a} {day.day} {day:%b}. See the forecast",
        "/#forecast-heading",
    )
    assert steps["lesson"] == (
        "Missed 2 times lately: read “Masks” again",
        "/decks/attention-basics/lesson/#masks",
    )
    assert steps["lab"][1] == "/labs/softmax/"
    assert steps["exercise"][1] == "/exercises/?kind=attention"
    assert steps["interview"][0].endswith("Explain masks.")
    # The exercise step opens the exercise page with that kind chosen.
    page.locator("#next-steps li[data-step=exercise] a").click()
    page.wait_for_url("**/exercises/?kind=attention")
    assert page.locator("#id_kind").input_value() == "attention"

    # "All done": the same steps, the lab gone once passed.
    Submission.objects.create(
        learner=learner, lab="softmax", code="x", seed=1, status="done", passed=True
    )
    page.goto(f"{base}/review/")
    page.wait_for_selector("h1:has-text('All done')")
    steps = _steps(page)
    assert "lab" not in steps
    assert steps["lesson"][1] == "/decks/attention-basics/lesson/#masks"
    assert steps["reviews"][0].startswith("Next reviews: 4 cards on")


def test_the_progress_page_shows_each_topic_in_numbers_and_bars(
    live_server, page, first_week, learner
):
    ReviewState.objects.filter(learner=learner, card__key="why-scale").update(step=4)
    ReviewLog.objects.create(
        learner=learner,
        card=first_week.cards.get(key="why-scale"),
        reviewed_at=timezone.now(),
        study_day=timezone.localdate(),
        result="pass",
        step_before=3,
        step_after=4,
        interval_days=30,
        due_before=timezone.localdate(),
        due_after=timezone.localdate(),
    )
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name="Progress by topic").click()
    page.wait_for_url("**/progress/")
    row = page.locator("li[data-topic='tag:softmax']")
    assert "1 mastered · 4 learned · of 4 cards · 33% passed (3 reviews)" in row.inner_text()
    bar = row.locator("svg")
    assert bar.get_attribute("aria-label") == "softmax: 1 mastered and 4 learned of 4 cards"
    assert row.locator("rect.bar-mastered").get_attribute("width") == "25.0%"
    assert row.locator("rect.bar-learned").get_attribute("width") == "100.0%"
    assert page.locator("li[data-topic='kind:attention']").count() == 1
    assert page.locator("li[data-topic='lab:softmax']").count() == 1
    page.get_by_text("Progress by topic as a table").click()
    cells = page.locator("#topics-table tbody tr").first.locator("th, td").all_inner_texts()
    assert cells == ["softmax", "tag", "4", "4", "1", "33%", "3"]
    # The header links here too.
    assert page.locator(".site-nav a[aria-current=page]").inner_text() == "Progress"


def test_the_theme_switch_keeps_the_choice_in_the_profile_without_scripts(
    live_server, browser, learner
):
    for page in open_view(
        browser,
        "desktop",
        {"width": 1280, "height": 900},
        java_script_enabled=False,
        color_scheme="light",
        service_workers="block",
    ):
        log_in(page.context, live_server, learner)
        page.goto(f"{live_server.url}/exercises/")
        assert page.get_attribute("html", "data-theme") == "auto"
        assert not _dark(page)
        page.locator("#theme-switch").get_by_role("button", name="Dark").click()
        page.wait_for_url("**/exercises/")
        assert page.get_attribute("html", "data-theme") == "dark"
        assert _dark(page)
        pressed = page.locator("#theme-switch button[aria-pressed=true]")
        assert pressed.inner_text() == "Dark"
        learner.profile.refresh_from_db()
        assert learner.profile.theme == "dark"
        page.locator("#theme-switch").get_by_role("button", name="Auto").click()
        page.wait_for_url("**/exercises/")
        learner.profile.refresh_from_db()
        assert learner.profile.theme == "auto"
        assert not _dark(page)


def test_the_device_scheme_is_followed_unless_the_profile_says_otherwise(
    live_server, browser, learner
):
    for page in open_view(
        browser,
        "phone",
        {"width": 390, "height": 844},
        color_scheme="dark",
        service_workers="block",
    ):
        page.goto(f"{live_server.url}/login/")  # nobody signed in: the device's scheme
        assert _dark(page)
        log_in(page.context, live_server, learner)
        page.goto(f"{live_server.url}/")
        assert _dark(page)
        learner.profile.theme = "light"
        learner.profile.save(update_fields=["theme"])
        page.reload()
        assert page.get_attribute("html", "data-theme") == "light"
        assert not _dark(page)


@pytest.fixture
def due_cards(deck, learner):
    """Six recall cards due today."""
    for position in range(3, 7):
        Card.objects.create(
            deck=deck, key=f"extra-{position}", prompt=f"Prompt {position}", position=position
        )
    card_services.enroll(learner=learner, deck=deck, at=timezone.now())
    learner.review_states.filter(card__kind=Card.Kind.EXERCISE).delete()
    learner.review_states.update(due_on=timezone.localdate() - dt.timedelta(days=1))
    return deck


def _hints_shown(page) -> bool:
    return (
        page.locator("#review-keys").is_visible()
        and page.locator("#grade-good kbd").count() == 1
        and page.evaluate(
            "getComputedStyle(document.querySelector('#show-answer kbd')).display !== 'none'"
        )
    )


def test_keyboard_hints_only_where_a_keyboard_is(live_server, browser, phone, due_cards, learner):
    log_in(phone.context, live_server, learner)
    phone.goto(f"{live_server.url}/review/")
    phone.wait_for_selector("#review-card")
    assert not _hints_shown(phone)
    phone.tap("#show-answer")
    phone.wait_for_selector("#answer-body", state="visible")
    assert not phone.locator("#grade-good kbd").is_visible()
    # A keyboard joined to the phone: the first key pressed shows the hints, page after page.
    phone.keyboard.press("Tab")
    wait_until(phone, "document.documentElement.hasAttribute('data-keyboard')")
    assert phone.locator("#grade-good kbd").is_visible()
    phone.reload()
    phone.wait_for_selector("#review-card")
    assert _hints_shown(phone)

    for desktop in open_view(
        browser, "desktop", {"width": 1280, "height": 900}, service_workers="block"
    ):
        log_in(desktop.context, live_server, learner)
        desktop.goto(f"{live_server.url}/review/")
        desktop.wait_for_selector("#review-card")
        assert _hints_shown(desktop)


def _open_review_kept(page, live_server, learner) -> None:
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    wait_until(page, "navigator.serviceWorker.controller !== null")
    wait_until(
        page,
        "caches.keys().then(ns => Promise.all(ns.map(n => caches.open(n).then(c => c.keys()))))"
        ".then(ls => ls.flat().some(r => new URL(r.url).pathname === '/review/'))",
    )


def _grade(page) -> None:
    card = page.get_attribute("#review-card", "data-card")
    page.click("#show-answer")
    page.click("#grade-good")
    wait_until(page, f"document.querySelector('#review-card').dataset.card !== '{card}'")


def test_offline_the_counter_survives_a_reload(live_server, page, due_cards, learner):
    _open_review_kept(page, live_server, learner)
    assert page.inner_text("#review-progress") == "Card 1 of 5"
    go_offline(page.context)
    _grade(page)
    _grade(page)
    assert page.inner_text("#review-progress") == "Card 3 of 5"
    shown = page.get_attribute("#review-card", "data-card")
    page.reload()
    page.wait_for_selector("#offline-status:has-text('2 answers are waiting')")
    assert page.get_attribute("#review-card", "data-card") == shown
    assert page.inner_text("#review-progress") == "Card 3 of 5"
    assert page.get_attribute("progress", "value") == "2"
    _grade(page)
    assert page.inner_text("#review-progress") == "Card 4 of 5"
    page.reload()
    page.wait_for_selector("#offline-status:has-text('3 answers are waiting')")
    assert page.inner_text("#review-progress") == "Card 4 of 5"
    assert not ReviewLog.objects.filter(learner=learner).exists()


def test_signed_out_and_offline_the_review_link_leads_to_log_in(
    live_server, page, due_cards, learner
):
    _open_review_kept(page, live_server, learner)
    page.get_by_role("button", name="Log out").click()
    page.wait_for_selector("a:has-text('Log in')")
    wait_until(
        page,
        "caches.keys().then(ns => !ns.some(n => n.includes('-learner-')))",
    )
    go_offline(page.context)
    page.goto(f"{live_server.url}/review/")
    assert page.inner_text("h1") == "You are offline"
    assert page.locator("a[href='/review/']").count() == 0
    link = page.get_by_role("link", name="log in")
    assert link.get_attribute("href") == "/login/?next=%2Freview%2F"


def test_signed_in_and_offline_a_page_never_opened_offers_the_review(
    live_server, page, due_cards, learner
):
    _open_review_kept(page, live_server, learner)
    go_offline(page.context)
    page.goto(f"{live_server.url}/playground/")
    assert page.inner_text("h1") == "You are offline"
    page.get_by_role("link", name="Go on reviewing offline").click()
    page.wait_for_selector("#review-card")
    assert page.get_attribute("html", "data-offline-copy") == "1"


def test_the_playground_says_the_results_wait_for_the_prediction(live_server, page, learner):
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/playground/?preset=abc")
    waiting = page.locator("#pg-results-waiting")
    waiting.wait_for(state="visible")
    assert "answer the prediction above, or skip it" in waiting.inner_text()
    assert page.locator("#pg-results").is_hidden()
    page.get_by_role("button", name="Show the results without predicting").click()
    page.wait_for_selector("#weights-table", state="visible")
    assert waiting.is_hidden()
    assert page.locator("#pg-predict").is_hidden()
    assert page.evaluate("document.activeElement.id") == "results-heading"
    # Committing a prediction reveals them too, and the note goes.
    page.goto(f"{live_server.url}/playground/?preset=abc")
    waiting.wait_for(state="visible")
    page.locator("input[name='pg-prediction']").first.check()
    page.get_by_role("button", name="Commit and show the weights").click()
    page.wait_for_selector("#weights-table", state="visible")
    assert waiting.is_hidden()
