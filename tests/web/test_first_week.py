"""A new learner's first weeks with the starter deck, in headless Chromium.

Day 0: sign up, read the lesson, enrol: the pace places 20 cards and the rest wait.
Day 1: 20 are due; once they are done the page names what to do next, and the beat job
places the next 20. Ten days away bring no wall of new cards. Mastery by topic rises as
cards climb the ladder. The lesson and progress pages are the README's screenshots
(``STUDY_SCREENSHOTS=1``).
"""

from __future__ import annotations

import datetime as dt
from io import StringIO

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.core.management import call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from cards import tasks
from cards.models import Deck, LessonSection, ReviewState
from exercises.models import Exercise

from .conftest import STATE_TIMEOUT_MS, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STARTER = "attention-and-transformers"
# A Tuesday afternoon in UTC: the learner's study day is the calendar day.
DAY0 = dt.datetime(2026, 12, 1, 15, 0, tzinfo=dt.UTC)
PACE = 20


def on_day(n: int) -> dt.datetime:
    return DAY0 + dt.timedelta(days=n)


def study_through_the_api(api: APIClient) -> int:
    """Pass every card due now as an API client would; returns how many were reviewed."""
    reviewed = 0
    while True:
        page = api.get("/api/v1/reviews/due/?page_size=100").json()
        items = [item for item in page["results"] if item["card"]["kind"] != "lab"]
        if not items:
            return reviewed
        for item in items:
            if item["card"]["kind"] == "exercise":
                exercise = item["exercise"]
                solution = dict(Exercise.objects.get(pk=exercise["id"]).solution)
                url = f"/api/v1/exercises/{exercise['id']}/submit/"
                if "prediction" in solution:  # the prediction is answered on its own first
                    first = {"prediction": solution.pop("prediction")}
                    predicted = api.post(url, {"answers": first}, format="json")
                    assert predicted.status_code == 200, predicted.content
                answer = api.post(url, {"answers": solution}, format="json")
            else:
                answer = api.post(
                    "/api/v1/reviews/",
                    {"card": item["card"]["id"], "result": "pass"},
                    format="json",
                )
            assert answer.status_code in (200, 201), answer.content
            reviewed += 1


def mastered(api: APIClient) -> int:
    topics = api.get("/api/v1/stats/topics/").json()
    rows = topics if isinstance(topics, list) else topics["results"]
    return sum(row["mastered"] for row in rows if row.get("type", "tag") == "tag")


def test_a_new_learners_first_weeks(live_server, browser, screenshot):
    call_command("load_starter_content", stdout=StringIO())
    deck = Deck.objects.get(slug=STARTER)
    active = deck.cards.filter(is_active=True).count()
    sections = list(LessonSection.objects.filter(deck=deck).values_list("key", flat=True))
    assert active > PACE and len(sections) >= 10

    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(STATE_TIMEOUT_MS)
    page = context.new_page()
    base = live_server.url
    with time_machine.travel(DAY0, tick=True) as traveller:
        # Day 0: sign up.
        page.goto(f"{base}/signup/")
        page.get_by_label("Username").fill("newcomer")
        page.get_by_label("Password", exact=True).fill("a-long-pass-phrase-7")
        page.get_by_label("Password confirmation").fill("a-long-pass-phrase-7")
        page.get_by_label("Time zone").select_option("UTC")
        page.get_by_role("button", name="Sign up").click()
        page.wait_for_url(f"{base}/")
        learner = get_user_model().objects.get(username="newcomer")
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=learner)[0]}")

        # Read the lesson, before enrolling: every section, with the worked example's figure.
        page.goto(f"{base}/decks/{STARTER}/lesson/")
        for key in sections:
            assert page.locator(f"[id='{key}']").count() == 1, key
        assert page.locator("table").count() > 0
        screenshot(page, "lesson", full_page=False)
        enrol = page.get_by_role("button", name=f"Enrol in {deck.title}")
        assert enrol.is_visible()

        # Enrol: the pace's first batch; the rest wait their turn.
        enrol.click()
        page.wait_for_url(f"{base}/")
        message = page.inner_text(".messages")
        assert f"{PACE} new cards" in message
        assert f"{active - PACE} more cards wait" in message
        assert ReviewState.objects.filter(learner=learner).count() == PACE
        assert api.get("/api/v1/stats/").json()["waiting"] == active - PACE

        # Day 1: exactly the first batch is due.
        traveller.move_to(on_day(1))
        page.goto(f"{base}/review/")
        page.wait_for_selector("#review-progress")
        assert page.inner_text("#review-progress") == f"Card 1 of {PACE}"
        page.keyboard.press("Space")
        page.wait_for_selector("#answer-body", state="visible")
        page.keyboard.press("2")
        page.wait_for_selector(f"text=Card 2 of {PACE}")
        assert study_through_the_api(api) == PACE - 1

        # All done: the page says what next, each step a link.
        page.goto(f"{base}/review/")
        page.wait_for_selector("text=All done for today")
        steps = page.locator("#next-steps li a")
        assert steps.count() >= 2
        assert all(steps.nth(i).get_attribute("href") for i in range(steps.count()))

        # The beat job places the next batch, due tomorrow; a second run places nothing.
        assert tasks.schedule_new_cards() == PACE
        assert tasks.schedule_new_cards() == 0

        # Ten days away: nothing new is placed while the learner does not review.
        for n in range(2, 12):
            traveller.move_to(on_day(n))
            assert tasks.schedule_new_cards() == 0
        traveller.move_to(on_day(12))
        stats = api.get("/api/v1/stats/").json()
        assert stats["due_today"] == 2 * PACE  # the second batch and the first's reviews
        assert stats["waiting"] == active - 2 * PACE

        # Mastery rises as cards pass: study on the days cards fall due, until some stand
        # on the top rung with their last review passed.
        assert mastered(api) == 0
        seen = [0]
        for n in (12, 19, 33, 47):
            traveller.move_to(on_day(n))
            tasks.schedule_new_cards()  # the beat's run as the day begins binds its exercises
            study_through_the_api(api)
            tasks.schedule_new_cards()
            seen.append(mastered(api))
        assert seen[-1] > 0
        assert seen == sorted(seen)

        # The progress page shows it (a fresh session: the first one has expired).
        log_in(context, live_server, learner)
        page.goto(f"{base}/progress/")
        page.wait_for_selector(".topic-bars")
        assert "mastered" in page.inner_text("main")
        screenshot(page, "progress", full_page=False)
    context.close()
