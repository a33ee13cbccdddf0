"""A browser that several learners use in turn: what it keeps of one for the next.

The worker keeps the review page and the dashboard per learner (never the profile or a
lab page: they are sent no-store), drops them when a page names another learner or none,
and offline shows nothing kept once the session is over, logged out or not. The answer
queue is kept per learner, sent only under that learner's session, and dropped at log-out
and when another learner signs in.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from cards import services as card_services
from cards.models import Card, ReviewLog
from labs import selectors as lab_selectors
from labs.models import Submission
from studyapp.cache_control import learner_key

from .conftest import STATE_TIMEOUT_MS, go_offline, go_online, log_in, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUEUE = "localStorage.getItem('study.review-queue.v1')"
CODE = "def softmax(x):\n    return 'alice wrote this'\n"
EMAIL = "alice@example.org"
CACHES = (
    "caches.keys().then(ns => Promise.all(ns.map(n => caches.open(n)"
    ".then(c => c.keys()).then(rs => [n, rs.map(r => new URL(r.url).pathname)]))))"
)


@pytest.fixture
def due_deck(deck, learner, other_learner):
    """Two recall cards due today for both learners; alice's e-mail and a lab she coded."""
    Card.objects.create(
        deck=deck, key="softmax-rows", kind=Card.Kind.RECALL, prompt="P", answer="A", position=3
    )
    for who in (learner, other_learner):
        card_services.enroll(learner=who, deck=deck, at=timezone.now())
        who.review_states.filter(card__kind=Card.Kind.EXERCISE).delete()
        who.review_states.update(due_on=timezone.localdate() - dt.timedelta(days=1))
    learner.email = EMAIL
    learner.save(update_fields=["email"])
    return deck


@pytest.fixture
def lab_slug(learner):
    lab = next(iter(lab_selectors.labs_list()))
    Submission.objects.create(
        learner=learner,
        lab=lab.slug,
        code=CODE,
        status=Submission.Status.DONE,
        passed=False,
        tests=[],
        seed=1,
    )
    return lab.slug


def _kept(page) -> dict[str, list[str]]:
    return {name: paths for name, paths in page.evaluate(CACHES) if "-learner-" in name}


def _open_as_alice(page, live_server, learner, lab_slug) -> None:
    """Alice opens the review page (the worker installs and keeps it), her dashboard, her
    profile and her lab."""
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    wait_until(page, "navigator.serviceWorker.controller !== null")
    key = learner_key(learner)
    wait_until(page, f"caches.has('{_static_cache(page)}-learner-{key}')")
    for path in ("/", "/profile/", f"/labs/{lab_slug}/"):
        page.goto(f"{live_server.url}{path}")
    assert EMAIL in page.goto(f"{live_server.url}/profile/").text()
    assert "alice wrote this" in page.goto(f"{live_server.url}/labs/{lab_slug}/").text()
    kept = _kept(page)
    assert list(kept) == [f"{_static_cache(page)}-learner-{key}"]
    # Only what offline review needs: never the profile or the lab page.
    assert sorted(next(iter(kept.values()))) == ["/", "/review/"]


def _static_cache(page) -> str:
    names = page.evaluate("caches.keys()")
    return next(name for name in names if "-learner-" not in name)


def _shows_nothing_of_alice(page, live_server, path: str, lab_slug: str) -> None:
    page.goto(f"{live_server.url}{path}")
    html = page.content()
    assert EMAIL not in html, path
    assert "alice wrote this" not in html, path
    assert page.inner_text("h1") == "You are offline", path


def test_a_session_ended_without_log_out_shows_nothing_kept_offline(
    live_server, page, due_deck, learner, lab_slug
):
    _open_as_alice(page, live_server, learner, lab_slug)
    # The session ends without a log-out: its cookies are cleared (or expire together).
    page.context.clear_cookies()
    go_offline(page.context)
    for path in ("/profile/", f"/labs/{lab_slug}/", "/", "/review/"):
        _shows_nothing_of_alice(page, live_server, path, lab_slug)
    assert _kept(page) == {}


def test_another_learner_signing_in_sees_none_of_the_first_learners_pages(
    live_server, page, due_deck, learner, other_learner, lab_slug
):
    _open_as_alice(page, live_server, learner, lab_slug)
    # Alice answers a card offline; it waits in the browser.
    go_offline(page.context)
    page.goto(f"{live_server.url}/review/")
    page.click("#show-answer")
    page.click("#grade-good")
    page.wait_for_selector("#offline-status:has-text('1 answer is waiting')")
    assert json.loads(page.evaluate(QUEUE))[0]["learner"] == learner_key(learner)

    # Her session ends without a log-out; Bob signs in on the same browser.
    page.context.clear_cookies()
    go_online(page.context)
    log_in(page.context, live_server, other_learner)
    page.goto(f"{live_server.url}/")
    bob = learner_key(other_learner)
    assert page.get_attribute("html", "data-learner") == bob
    wait_until(page, f"{QUEUE} === '[]'")
    wait_until(
        page, f"caches.keys().then(ns => !ns.some(n => n.endsWith('{learner_key(learner)}')))"
    )
    assert not ReviewLog.objects.exists()  # Alice's answer was never sent, under any account
    for path in ("/profile/", f"/labs/{lab_slug}/"):
        html = page.goto(f"{live_server.url}{path}").text()
        assert EMAIL not in html and "alice wrote this" not in html

    # Offline, Bob sees his own kept dashboard, and nothing of Alice's anywhere.
    wait_until(
        page,
        f"caches.open('{_static_cache(page)}-learner-{bob}').then(c => c.match('/')).then(Boolean)",
    )
    go_offline(page.context)
    page.goto(f"{live_server.url}/")
    assert page.get_attribute("html", "data-offline-copy") == "1"
    assert page.get_attribute("html", "data-learner") == bob
    for path in ("/profile/", f"/labs/{lab_slug}/"):
        _shows_nothing_of_alice(page, live_server, path, lab_slug)
    assert list(_kept(page)) == [f"{_static_cache(page)}-learner-{bob}"]


def test_signing_out_sends_what_waits_then_forgets_the_learner(
    live_server, page, due_deck, learner
):
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    wait_until(page, "navigator.serviceWorker.controller !== null")
    page.context.route("**/api/v1/reviews/", lambda route: route.abort("internetdisconnected"))
    page.click("#show-answer")
    page.click("#grade-good")
    page.wait_for_selector("#offline-status:has-text('1 answer is waiting')")
    page.context.unroute("**/api/v1/reviews/")

    with page.expect_navigation(url=f"{live_server.url}/login/"):
        page.get_by_role("button", name="Log out").click()
    assert ReviewLog.objects.filter(learner=learner).count() == 1
    assert page.evaluate(QUEUE) == "[]"
    assert page.evaluate("localStorage.getItem('study.review-sent.v1')") == "[]"
    assert _kept(page) == {}
    assert page.get_attribute("html", "data-learner") is None


def test_signing_out_drops_answers_the_server_would_not_take(live_server, page, due_deck, learner):
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    page.context.route("**/api/v1/reviews/", lambda route: route.fulfill(status=503, body="{}"))
    page.click("#show-answer")
    page.click("#grade-good")
    page.wait_for_selector("#offline-status:has-text('1 answer is waiting')")

    with page.expect_navigation(url=f"{live_server.url}/login/"):
        page.get_by_role("button", name="Log out").click()
    assert page.evaluate(QUEUE) == "[]"
    assert not ReviewLog.objects.exists()


def test_a_tab_left_from_an_earlier_session_sends_nothing_under_the_next(
    live_server, page, due_deck, learner, other_learner
):
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    # In another tab, Alice's session ends and Bob signs in.
    page.context.clear_cookies()
    log_in(page.context, live_server, other_learner)
    other = page.context.new_page()
    other.goto(f"{live_server.url}/profile/")
    assert other.get_attribute("html", "data-learner") == learner_key(other_learner)

    # Alice's old tab grades a card: it waits, and is never sent with Bob's cookie.
    page.click("#show-answer")
    page.click("#grade-good")
    page.wait_for_selector("#offline-status:has-text('1 answer is waiting')")
    page.evaluate("window.studyOffline.flush()")
    other.reload()
    wait_until(other, f"{QUEUE} === '[]'")
    assert not ReviewLog.objects.exists()


def test_a_kept_copy_of_another_learner_is_refused_by_the_page(
    live_server, browser, due_deck, learner, other_learner
):
    """Where the worker cannot read the cookie, the kept copy's own script refuses it: the
    page stops before its body and drops the pages kept for anyone but Bob."""
    context = browser.new_context(service_workers="block")
    context.set_default_timeout(STATE_TIMEOUT_MS)
    page = context.new_page()
    log_in(context, live_server, other_learner)
    page.goto(f"{live_server.url}/profile/")
    alice, bob = learner_key(learner), learner_key(other_learner)
    page.evaluate(
        "names => Promise.all(names.map(n => caches.open(n)"
        ".then(c => c.put('/', new Response('kept')))))",
        [f"study-v-learner-{alice}", f"study-v-learner-{bob}"],
    )
    copy = (
        f'<!doctype html><html lang="en" data-offline-copy="1" data-learner="{alice}"><head>'
        '<script src="/static/js/offline.js"></script></head>'
        f"<body><p id='secret'>{EMAIL}</p></body></html>"
    )
    context.route(
        f"{live_server.url}/kept-copy/",
        lambda route: route.fulfill(body=copy, content_type="text/html; charset=utf-8"),
    )
    page.goto(f"{live_server.url}/kept-copy/", wait_until="commit")
    page.wait_for_selector("html[data-foreign-copy]", state="attached")
    wait_until(page, f"caches.keys().then(ns => ns.join() === 'study-v-learner-{bob}')")
    assert page.locator("#secret").count() == 0
    context.close()
