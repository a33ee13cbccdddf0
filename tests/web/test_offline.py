"""The review page in a flaky network, its keys, and the installable web app.

Chromium's network is switched off and on with ``context.set_offline``: answers given
offline wait in localStorage with their Idempotency-Key and are sent once, when the
connection returns (on the ``online`` event, or by the retry timer where the browser
never fires it). The service worker, sending from other pages and the controls offline
are in test_offline_pages.py.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from cards import services as card_services
from cards.models import Card, ReviewLog, ReviewState

from .conftest import go_offline, go_online, log_in, settle, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def due_deck(deck, learner):
    """Three recall cards, all due today for ``learner``."""
    for position, key in ((3, "softmax-rows"), (4, "causal-mask")):
        Card.objects.create(
            deck=deck,
            key=key,
            kind=Card.Kind.RECALL,
            prompt=f"Prompt of {key}",
            answer=f"Answer of {key}",
            position=position,
        )
    card_services.enroll(learner=learner, deck=deck, at=timezone.now())
    learner.review_states.filter(card__kind=Card.Kind.EXERCISE).delete()
    learner.review_states.update(due_on=timezone.localdate() - dt.timedelta(days=1))
    return deck


def _card_id(page) -> int:
    return int(page.get_attribute("#review-card", "data-card"))


def _grade_good(page) -> int:
    # Clicks, which wait until their target can take them; the keys have their own test
    # (test_keys_leave_links_and_buttons_alone), and a key pressed while the carried
    # card's details are still closing could be lost.
    card = _card_id(page)
    page.click("#show-answer")
    page.click("#grade-good")
    return card


def test_answers_given_offline_are_queued_and_sent_once(live_server, page, due_deck, learner):
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    assert page.inner_text("#review-progress") == "Card 1 of 3"

    go_offline(page.context)
    first = _grade_good(page)
    page.wait_for_selector("#offline-status:has-text('1 answer is waiting')")
    assert page.inner_text("#review-progress") == "Card 2 of 3"
    second = _grade_good(page)
    page.wait_for_selector("#offline-status:has-text('2 answers are waiting')")
    assert len({first, second, _card_id(page)}) == 3
    assert not ReviewLog.objects.filter(learner=learner).exists()
    queued = json.loads(page.evaluate("localStorage.getItem('study.review-queue.v1')"))
    assert [item["card"] for item in queued] == [first, second]
    assert all(item["key"] for item in queued)

    go_online(page.context)
    page.wait_for_selector("#offline-status:has-text('All answers given offline have been sent')")
    logs = ReviewLog.objects.filter(learner=learner)
    assert sorted(logs.values_list("card_id", flat=True)) == sorted([first, second])
    assert all(log.result == "pass" for log in logs)
    assert set(
        ReviewState.objects.filter(card_id__in=[first, second]).values_list("step", flat=True)
    ) == {1}
    assert page.evaluate("localStorage.getItem('study.review-queue.v1')") == "[]"

    # A queue that is sent again (a tab closed mid-send, say) replays, never counts twice;
    # the next page that loads sends it, whichever it is.
    page.evaluate(
        "items => localStorage.setItem('study.review-queue.v1', JSON.stringify(items))", queued
    )
    page.goto(f"{live_server.url}/profile/")
    wait_until(page, "localStorage.getItem('study.review-queue.v1') === '[]'")
    assert ReviewLog.objects.filter(learner=learner).count() == 2
    assert set(
        ReviewState.objects.filter(card_id__in=[first, second]).values_list("step", flat=True)
    ) == {1}


def test_online_grade_goes_through_the_api_and_says_so(live_server, page, due_deck, learner):
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    card = _grade_good(page)
    page.wait_for_selector("#review-flash:has-text('Good: next review in 3 days')")
    assert page.inner_text("#review-progress") == "Card 2 of 3"
    assert _card_id(page) != card
    assert ReviewLog.objects.get(learner=learner).card_id == card
    assert page.evaluate("localStorage.getItem('study.review-queue.v1')") == "[]"


def test_queued_answers_of_another_learner_are_not_sent(
    live_server, page, due_deck, learner, other_learner
):
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    theirs = [{"key": "k-1", "card": _card_id(page), "result": "fail", "learner": "999999"}]
    page.evaluate(
        "items => localStorage.setItem('study.review-queue.v1', JSON.stringify(items))", theirs
    )
    page.reload()
    page.wait_for_load_state("networkidle")
    assert not ReviewLog.objects.exists()
    assert page.is_hidden("#offline-status")


def test_keys_leave_links_and_buttons_alone(live_server, page, due_deck, learner):
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    # Enter on a focused nav link follows the link instead of showing the answer.
    page.get_by_role("link", name="Playground").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/playground/")
    page.goto(f"{live_server.url}/review/")
    # Space on the focused "Log out" button does not show the answer (it would log out).
    page.evaluate("document.querySelector('.site-nav button').focus()")
    page.evaluate(
        "document.querySelector('.site-nav form').addEventListener('submit', e => e.preventDefault())"
    )
    page.keyboard.press("Space")
    assert page.is_hidden("#answer-body")
    # With the answer shown, a digit while a link has focus grades nothing.
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("Space")
    page.wait_for_selector("#answer-body", state="visible")
    page.get_by_role("link", name="Dashboard").focus()
    sent = []
    page.on("request", lambda request: sent.append(request.url))
    page.keyboard.press("2")
    settle(page)
    assert not [url for url in sent if "/api/v1/reviews/" in url]
    assert not ReviewLog.objects.exists()
    # From the grade buttons, where focus lands, the keys work.
    page.locator("#grade-good").focus()
    page.keyboard.press("2")
    page.wait_for_selector("#review-flash:has-text('Good')")
    assert ReviewLog.objects.filter(learner=learner).count() == 1


def test_manifest_makes_the_site_installable(live_server, page):
    page.goto(f"{live_server.url}/login/")
    href = page.get_attribute("link[rel=manifest]", "href")
    response = page.request.get(f"{live_server.url}{href}")
    assert response.status == 200
    manifest = response.json()
    assert manifest["display"] == "standalone"
    assert manifest["start_url"] == "/"
    sizes = {icon["sizes"] for icon in manifest["icons"]}
    assert {"192x192", "512x512"} <= sizes
    for icon in manifest["icons"]:
        image = page.request.get(f"{live_server.url}{icon['src']}")
        assert image.status == 200, icon
        assert image.headers["content-type"] == icon["type"]
    assert page.get_attribute("meta[name=theme-color]", "content")
    assert page.get_attribute("link[rel=apple-touch-icon]", "href")
