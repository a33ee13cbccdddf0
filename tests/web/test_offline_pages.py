"""The review page offline through the service worker, the queue sent from any page,
the timer that sends it when the browser never reports a connection, and the study
controls while the server cannot be reached.

Each state is checked at a phone width (390 px) and a desktop width (1280 px) with
axe-core, and saved as ``artifacts/screenshots/offline-<state>-<width>.png``.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from cards import services as card_services
from cards.models import Card, ReviewLog, ReviewState
from studyapp.cache_control import learner_key

from .conftest import (
    STATE_TIMEOUT_MS,
    axe_check,
    go_offline,
    go_online,
    log_in,
    open_view,
    settle,
    wait_until,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}
QUEUE = "localStorage.getItem('study.review-queue.v1')"


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


@pytest.fixture(params=list(WIDTHS))
def view(request, browser):
    """A page at one of the two widths, named after it for the screenshots."""
    # A test about the controls' own guard marks itself "no_worker": its page runs without
    # the service worker, which other tests here are about. (sw.js never answers /healthz
    # or a POST itself; this keeps the worker's own fetches out of that test.)
    workers = "block" if request.node.get_closest_marker("no_worker") else "allow"
    yield from open_view(browser, request.param, WIDTHS[request.param], service_workers=workers)


@pytest.fixture
def check(axe, screenshot):
    """Save a screenshot of the page as it stands and fail on any axe violation."""

    def run(page, name: str) -> None:
        axe_check(axe, screenshot, page, f"offline-{name}-{page.width_name}", name)

    return run


def _card_id(page) -> int:
    return int(page.get_attribute("#review-card", "data-card"))


def _grade_good(page) -> int:
    card = _card_id(page)
    page.click("#show-answer")
    page.click("#grade-good")
    return card


def _open_review_kept(page, live_server, learner) -> None:
    """Log in, open /review/ and wait until the service worker controls it."""
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    wait_until(page, "navigator.serviceWorker.controller !== null")
    # The pages are kept once the worker is installed; the review page is among them.
    wait_until(
        page,
        "caches.keys().then(ns => Promise.all(ns.map(n => caches.open(n).then(c => c.keys()))))"
        ".then(ls => ls.flat().some(r => new URL(r.url).pathname === '/review/'))",
    )


def _wait_for_logs(page, learner, count: int, timeout_ms: int = 10_000) -> None:
    for _ in range(timeout_ms // 50):
        if ReviewLog.objects.filter(learner=learner).count() >= count:
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"the server never had {count} reviews")


def _nav_badge(page) -> str:
    return page.inner_text("#nav-due").strip()


def test_the_review_page_loads_offline_after_a_first_visit(
    live_server, view, due_deck, learner, check
):
    page = view
    _open_review_kept(page, live_server, learner)
    first = _card_id(page)
    go_offline(page.context)
    page.reload()
    # Served by the worker from its cache, with its styles and scripts.
    assert page.get_attribute("html", "data-offline-copy") == "1"
    assert page.inner_text("h1") == "Review"
    assert page.evaluate(
        "getComputedStyle(document.querySelector('.site-header')).backgroundColor"
    ) not in ("rgba(0, 0, 0, 0)", "transparent")
    assert page.evaluate("typeof window.studyOffline") == "object"
    assert _card_id(page) == first
    check(page, "review-reloaded")

    # Answers go on offline; reloaded again, the kept page skips the card answered.
    _grade_good(page)
    page.wait_for_selector("#offline-status:has-text('1 answer is waiting')")
    second = _card_id(page)
    assert second != first
    page.reload()
    page.wait_for_selector("#offline-status:has-text('1 answer is waiting')")
    assert page.is_visible("#review-card")
    assert _card_id(page) == second
    assert page.inner_text("#review-progress") == "Card 2 of 3"
    assert _nav_badge(page) == "2"  # the kept page's count, less the answer waiting
    check(page, "review-reloaded-with-answer-waiting")
    assert not ReviewLog.objects.filter(learner=learner).exists()

    # A page never opened is the worker's own offline page, not the browser's error.
    page.goto(f"{live_server.url}/playground/")
    assert page.inner_text("h1") == "You are offline"
    check(page, "page-never-opened")

    go_online(page.context)
    page.goto(f"{live_server.url}/review/")
    page.wait_for_selector("#review-card:visible")
    assert ReviewLog.objects.filter(learner=learner).count() == 1
    assert ReviewLog.objects.get(learner=learner).card_id == first


def test_the_worker_keeps_no_api_answer_and_drops_old_versions(
    live_server, page, due_deck, learner, monkeypatch
):
    _open_review_kept(page, live_server, learner)
    page.evaluate("fetch('/api/v1/reviews/due/').then(r => r.json())")
    page.goto(f"{live_server.url}/")
    page.wait_for_load_state("networkidle")
    kept = page.evaluate(
        "caches.keys().then(ns => Promise.all(ns.map(n => caches.open(n)"
        ".then(c => c.keys()).then(rs => [n, rs.map(r => new URL(r.url).pathname)]))))"
    )
    # The static files in the version's cache, the pages in the learner's.
    caches = dict(kept)
    assert len(caches) == 2
    static_name = next(name for name in caches if "-learner-" not in name)
    pages_name = f"{static_name}-learner-{learner_key(learner)}"
    assert {"/static/css/site.css", "/static/js/offline.js"} <= set(caches[static_name])
    assert set(caches[pages_name]) == {"/review/", "/"}
    assert not [path for paths in caches.values() for path in paths if path.startswith("/api/")]

    # A new version of the kept files names new caches; the old ones go on activation.
    monkeypatch.setattr("studyapp.views._offline_version", lambda: "next-version")
    monkeypatch.setattr("studyapp.views._cached_offline_version", lambda: "next-version")
    page.evaluate("navigator.serviceWorker.getRegistration().then(r => r.update())")
    wait_until(
        page,
        "caches.keys().then(ns => ns.sort().join() === "
        f"'study-next-version,study-next-version-learner-{learner_key(learner)}')",
    )


def test_answers_queued_offline_are_sent_once_from_the_dashboard(
    live_server, view, due_deck, learner, check
):
    page = view
    _open_review_kept(page, live_server, learner)
    assert _nav_badge(page) == "3"
    go_offline(page.context)
    first = _grade_good(page)
    page.wait_for_selector("#offline-status:has-text('1 answer is waiting')")
    second = _grade_good(page)
    page.wait_for_selector("#offline-status:has-text('2 answers are waiting')")
    assert _nav_badge(page) == "1"
    check(page, "review-two-answers-waiting")

    # The dashboard, kept by the worker, opens offline and keeps the queue.
    page.goto(f"{live_server.url}/")
    assert page.get_attribute("html", "data-offline-copy") == "1"
    check(page, "dashboard-offline")
    assert not ReviewLog.objects.filter(learner=learner).exists()

    go_online(page.context)
    page.goto(f"{live_server.url}/")
    wait_until(page, f"{QUEUE} === '[]'")
    page.wait_for_selector("#nav-due:text-is('1')")
    assert page.get_attribute("#nav-due", "aria-label") == "1 due"
    logs = ReviewLog.objects.filter(learner=learner)
    assert sorted(logs.values_list("card_id", flat=True)) == sorted([first, second])
    assert set(
        ReviewState.objects.filter(card_id__in=[first, second]).values_list("step", flat=True)
    ) == {1}
    check(page, "dashboard-sent")

    # Other pages send again what a closed tab left mid-send: replayed, never counted twice.
    page.evaluate(
        "items => localStorage.setItem('study.review-queue.v1', JSON.stringify(items))",
        [
            {"key": key, "card": card, "result": "pass", "learner": learner_key(learner)}
            for key, card in (("replay-1", first), ("replay-2", second))
        ],
    )
    page.goto(f"{live_server.url}/profile/")
    wait_until(page, f"{QUEUE} === '[]'")
    assert ReviewLog.objects.filter(learner=learner).count() == 2


def test_the_timer_sends_the_queue_when_the_browser_never_reports_a_connection(
    live_server, view, due_deck, learner, check
):
    """The API fails, then answers, and the browser fires no "online" event.

    On a machine whose only network is loopback ``navigator.onLine`` is false throughout
    and this passes all the same.
    """
    page = view
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    page.evaluate("window.onlineEvents = 0; addEventListener('online', () => onlineEvents++)")
    page.context.route("**/api/v1/reviews/", lambda route: route.abort("internetdisconnected"))
    card = _grade_good(page)
    page.wait_for_selector("#offline-status:has-text('1 answer is waiting')")
    check(page, "review-server-unreachable")
    assert not ReviewLog.objects.filter(learner=learner).exists()

    page.context.unroute("**/api/v1/reviews/")
    page.wait_for_selector(
        "#offline-status:has-text('All answers given offline have been sent')", timeout=20_000
    )
    assert page.evaluate("onlineEvents") == 0
    assert list(ReviewLog.objects.filter(learner=learner).values_list("card_id", flat=True)) == [
        card
    ]
    page.wait_for_selector("#nav-due:text-is('2')")
    check(page, "review-sent-by-the-timer")


# Run in every document of the page, before its scripts: notes each frame in which a
# given card is visible in #review-card, in sessionStorage so reloads keep the record.
WATCH_CARD = """
(() => {
  const watch = () => {
    const hidden = sessionStorage.getItem('watch-card');
    const card = document.getElementById('review-card');
    if (hidden && card && card.getAttribute('data-card') === hidden
        && getComputedStyle(card).visibility === 'visible' && !card.hidden) {
      sessionStorage.setItem('watch-seen', '1');
    }
    requestAnimationFrame(watch);
  };
  requestAnimationFrame(watch);
})();
"""


def test_after_reconnecting_no_card_answered_offline_is_shown(
    live_server, view, due_deck, learner, check
):
    page = view
    log_in(page.context, live_server, learner)
    page.context.add_init_script(WATCH_CARD)
    page.goto(f"{live_server.url}/review/")
    page.context.route("**/api/v1/reviews/", lambda route: route.abort("internetdisconnected"))
    answered = _grade_good(page)
    page.wait_for_selector("#offline-status:has-text('1 answer is waiting')")
    page.evaluate("card => sessionStorage.setItem('watch-card', String(card))", answered)

    # Reconnected: the server still has the answered card first until the queue is sent.
    page.context.unroute("**/api/v1/reviews/")
    page.goto(f"{live_server.url}/review/")
    _wait_for_logs(page, learner, 1)
    # The page reloads once the queue is sent, and shows its card only then.
    page.wait_for_selector("html:not([data-queue]) #review-card:visible")
    page.wait_for_load_state("load")
    assert page.evaluate(QUEUE) == "[]"
    assert _card_id(page) != answered
    assert page.inner_text("#review-progress") == "Card 2 of 3"
    assert page.get_attribute("html", "data-queue") is None
    assert page.evaluate("sessionStorage.getItem('watch-seen')") is None
    assert ReviewLog.objects.filter(learner=learner).count() == 1
    check(page, "review-after-reconnect")


def test_controls_wait_for_the_server_with_a_message(live_server, view, due_deck, learner, check):
    page = view
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    _grade_good(page)  # online: Undo is offered for it, on the next page
    page.wait_for_selector("#undo-button")
    page.wait_for_load_state()  # its scripts have run: the controls are guarded

    # Offline, the next grade waits and the page goes on with a card it carries; the
    # failed send is what tells the page (navigator.onLine may never change).
    go_offline(page.context)
    _grade_good(page)
    page.wait_for_selector("#offline-status:has-text('1 answer is waiting')")
    page.wait_for_selector("#controls-status:has-text('You are offline')")
    assert page.get_attribute("#controls-status", "role") == "status"
    for selector in ["#bury-button", "#suspend-button", "#report-send"]:
        assert page.is_disabled(selector), selector
    # The controls act on the card shown; the server's last grade is not the last one.
    shown = _card_id(page)
    assert f"/cards/{shown}/bury/" in page.get_attribute(
        "#card-controls form:has(#bury-button)", "action"
    )
    assert f"/cards/{shown}/suspend/" in page.get_attribute(
        "#card-controls form:has(#suspend-button)", "action"
    )
    assert page.input_value("#report-form input[name=card]") == str(shown)
    assert page.is_hidden("#undo-form")
    page.click("#report-toggle")
    page.fill("#report-text", "The answer leaves out the scaling.")
    check(page, "controls-offline")
    assert ReviewLog.objects.filter(learner=learner).count() == 1

    go_online(page.context)
    page.wait_for_selector("#controls-status:has-text('Back online')", timeout=20_000)
    page.wait_for_selector("#offline-status:has-text('All answers given offline have been sent')")
    for selector in ["#bury-button", "#suspend-button", "#report-send"]:
        assert page.is_enabled(selector), selector
    assert page.input_value("#report-text") == "The answer leaves out the scaling."
    check(page, "controls-back-online")
    with page.expect_navigation():
        page.click("#report-send")
    report = learner.reports.get()
    assert (report.card_id, report.text) == (shown, "The answer leaves out the scaling.")
    page.goto(f"{live_server.url}/review/")
    with page.expect_navigation():
        page.click("#bury-button")
    assert ReviewLog.objects.filter(learner=learner).count() == 2


@pytest.mark.no_worker
def test_a_control_posted_while_the_server_does_not_answer_stays_on_the_page(
    live_server, view, due_deck, learner, check
):
    """The browser says online; the server does not answer: no browser error page.

    Every request to the server is refused, the offline queue's own sends included (one
    that got through would rightly tell the page the server is back). The route is the
    context's: once the service worker controls the page, requests go through it, and
    only the context's routes see a worker's requests."""
    page = view
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    _grade_good(page)  # online: Undo is offered for it, on the next page
    page.wait_for_selector("#undo-button")
    page.wait_for_load_state()  # its scripts have run: the controls are guarded
    shown = _card_id(page)
    server = f"{live_server.url}/**"
    page.context.route(server, _refuse)
    page.click("#suspend-button")
    page.wait_for_selector("#controls-status:has-text('You are offline')")
    assert page.url == f"{live_server.url}/review/"
    for selector in ["#undo-button", "#bury-button", "#suspend-button", "#report-send"]:
        assert page.is_disabled(selector), selector
    page.keyboard.press("u")  # Undo's key does nothing either
    settle(page)
    assert page.url == f"{live_server.url}/review/"
    assert ReviewLog.objects.filter(learner=learner).count() == 1
    check(page, "controls-server-unreachable")
    assert not ReviewState.objects.get(learner=learner, card_id=shown).suspended

    page.context.unroute(server, _refuse)
    # The next request that reaches the server (here: a probe on "online") turns them back on.
    page.evaluate("dispatchEvent(new Event('online'))")
    page.wait_for_selector("#controls-status:has-text('Back online')")
    with page.expect_navigation():
        page.click("#suspend-button")
    assert ReviewState.objects.get(learner=learner, card_id=shown).suspended


def _refuse(route) -> None:
    route.abort("connectionrefused")


@pytest.mark.parametrize("failure", ["refused", "browser offline"])
def test_an_answer_that_arrives_after_a_later_failure_leaves_the_controls_off(
    live_server, page_without_worker, due_deck, learner, failure
):
    """The latest word decides: the nav badge's count, asked for before the server
    stopped answering (a refused Suspend, or the browser's own "offline") and answered
    after, does not turn the controls back on."""
    page = page_without_worker
    base = live_server.url
    log_in(page.context, live_server, learner)
    page.goto(f"{base}/review/")
    page.wait_for_load_state("networkidle")
    held = []
    page.route(re.compile(r"/api/v1/reviews/due/\?page_size=1$"), lambda route: held.append(route))
    page.evaluate("window.studyOffline.refreshBadge(); undefined")
    for _ in range(STATE_TIMEOUT_MS // 50):
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the page never asked for its badge's count"

    if failure == "refused":
        page.context.route(f"{base}/**", _refuse)
        page.click("#suspend-button")
    else:
        page.evaluate("dispatchEvent(new Event('offline'))")
    page.wait_for_selector("#controls-status:has-text('You are offline')")
    page.evaluate("document.getElementById('nav-due').textContent = '?'")
    held[0].continue_()  # the count's answer arrives now, after the failure
    wait_until(page, "document.getElementById('nav-due').textContent.trim() !== '?'")

    assert page.inner_text("#controls-status").startswith("You are offline")
    for selector in ["#bury-button", "#suspend-button", "#report-send"]:
        assert page.is_disabled(selector), selector
    assert page.url == f"{base}/review/"
    assert not ReviewState.objects.filter(learner=learner, suspended=True).exists()


def test_a_report_from_the_card_notes_page_waits_for_the_server(
    live_server, view, due_deck, learner, check
):
    """The report form outside the review page is guarded too: no browser error page."""
    page = view
    log_in(page.context, live_server, learner)
    card = due_deck.cards.order_by("position").first()
    page.goto(f"{live_server.url}/cards/{card.pk}/notes/")
    page.click("#report-toggle")
    page.fill("#report-text", "A formula is cut short.")
    server = f"{live_server.url}/**"  # every request, as in the review page's test
    page.context.route(server, _refuse)
    page.click("#report-send")
    page.wait_for_selector("#controls-status:has-text('You are offline')")
    assert page.url == f"{live_server.url}/cards/{card.pk}/notes/"
    assert page.is_disabled("#report-send")
    assert page.input_value("#report-text") == "A formula is cut short."
    check(page, "notes-report-server-unreachable")
    assert not learner.reports.exists()

    page.context.unroute(server, _refuse)
    page.evaluate("dispatchEvent(new Event('online'))")
    page.wait_for_selector("#controls-status:has-text('Back online')")
    with page.expect_navigation():
        page.click("#report-send")
    assert learner.reports.get().text == "A formula is cut short."


def _grade_good_while_the_queue_is_held(page, live_server, learner) -> int:
    """Open /review/ with the queue's lock held from before the page's scripts run (so the
    page's on-load send waits on it), grade the card Good with the keys, and wait until
    the grade is queued; ``window.releaseQueueLock()`` lets the sends go. The card's id."""
    page.add_init_script(
        "navigator.locks.request('study.review-queue',"
        " () => new Promise(release => { window.releaseQueueLock = release; }))"
    )
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    card = _card_id(page)
    page.keyboard.press("Space")
    page.keyboard.press("2")
    wait_until(page, f"JSON.parse({QUEUE}).length === 1")
    return card


def test_a_grade_sent_by_the_page_load_send_still_moves_the_page_on(
    live_server, page, due_deck, learner
):
    """The page's own on-load send waits for the queue's lock; a grade queued meanwhile is
    sent by that run, and the grade's later send (which finds nothing left) still learns
    the server's answer and moves on, instead of taking the page offline."""
    first = _grade_good_while_the_queue_is_held(page, live_server, learner)
    page.evaluate("window.releaseQueueLock()")
    page.wait_for_selector("text=Good: next review in")
    assert _card_id(page) != first
    assert page.is_hidden("#offline-status")
    assert list(ReviewLog.objects.filter(learner=learner).values_list("card_id", flat=True)) == [
        first
    ]


def test_every_send_reports_the_answers_an_earlier_run_received(
    live_server, page, due_deck, learner
):
    log_in(page.context, live_server, learner)
    page.goto(f"{live_server.url}/review/")
    card = _card_id(page)
    answers = page.evaluate(
        """async (card) => {
          const queue = window.studyOffline;
          let release;
          const held = new Promise((done) => { release = done; });
          await new Promise((granted) =>
            navigator.locks.request("study.review-queue", () => { granted(); return held; }));
          const earlier = queue.flush();  // waits for the lock
          await new Promise((done) => setTimeout(done, 50));
          const item = queue.enqueue({ card: card, result: "fail" });
          const later = queue.flush();  // runs after the earlier one, which sends the item
          release();
          const [a, b] = await Promise.all([earlier, later]);
          return [a.answers[item.key], b.answers[item.key]];
        }""",
        card,
    )
    assert [answer["status"] for answer in answers] == [201, 201]
    assert all(answer["final"] for answer in answers)
    assert ReviewLog.objects.filter(learner=learner, card_id=card).count() == 1


def test_a_grade_another_tab_sent_meanwhile_moves_the_page_on(live_server, page, due_deck, learner):
    first = _grade_good_while_the_queue_is_held(page, live_server, learner)
    # Another tab sends the answer (as its own send would: post it, then drop it).
    other = page.context.new_page()
    other.goto(f"{live_server.url}/profile/")
    status = other.evaluate(
        """async () => {
          const [item] = JSON.parse(localStorage.getItem("study.review-queue.v1"));
          const token = document.cookie.match(/csrftoken=([^;]+)/)[1];
          const response = await fetch("/api/v1/reviews/", {
            method: "POST",
            headers: { "Content-Type": "application/json", "X-CSRFToken": token,
                       "Idempotency-Key": item.key },
            body: JSON.stringify({ card: item.card, result: item.result }),
          });
          localStorage.setItem("study.review-queue.v1", "[]");
          return response.status;
        }"""
    )
    assert status == 201
    page.evaluate("window.releaseQueueLock()")
    page.wait_for_selector(f"#review-card:not([data-card='{first}'])")
    assert page.get_attribute("html", "data-offline-copy") is None
    assert page.is_hidden("#offline-status")
    assert ReviewLog.objects.filter(learner=learner).count() == 1


SENT = "study.review-sent.v1"


def _sent_by_another_page(page, learner, card_id: int) -> None:
    page.evaluate(
        "([key, learner, card]) => localStorage.setItem(key, JSON.stringify("
        "[{learner: learner, card: card, t: Date.now()}]))",
        [SENT, learner_key(learner), card_id],
    )


@pytest.fixture
def page_without_worker(browser):
    """A page whose navigations reach the test's routes (a service worker's would not)."""
    context = browser.new_context(service_workers="block")
    context.set_default_timeout(STATE_TIMEOUT_MS)
    yield context.new_page()
    context.close()


def test_a_page_counted_before_answers_sent_elsewhere_counts_again(
    live_server, page_without_worker, due_deck, learner
):
    """A page the server counted while another page was still sending its answers shows
    the count from before them; so does a tab open while another tab sends. Each asks
    the server for the count again."""
    page = page_without_worker
    base = live_server.url
    log_in(page.context, live_server, learner)
    page.goto(f"{base}/profile/")
    assert _nav_badge(page) == "3"
    first, second = [state.card_id for state in learner.review_states.order_by("card_id")[:2]]

    # Another tab sends an answer: this tab hears of it and counts again.
    card_services.review_record(learner=learner, card=first, result="pass", at=timezone.now())
    other = page.context.new_page()
    other.goto(f"{base}/profile/")
    assert _nav_badge(other) == "2"
    _sent_by_another_page(other, learner, first)
    page.wait_for_selector("#nav-due:text-is('2')")

    # A page whose count was taken before an answer another page had just sent: the
    # server's count is rewritten here to the one from before that answer.
    card_services.review_record(learner=learner, card=second, result="pass", at=timezone.now())

    def counted_before(route):
        response = route.fetch()
        body = response.text().replace('id="nav-due"', 'data-stale id="nav-due"')
        body = re.sub(r'(data-stale id="nav-due"[^>]*>)1<', r"\g<1>2<", body)
        route.fulfill(response=response, body=body)

    page.context.route(f"{base}/", counted_before)
    _sent_by_another_page(page, learner, second)
    page.goto(f"{base}/")
    assert page.get_attribute("#nav-due", "data-stale") == ""  # the rewritten page
    page.wait_for_selector("#nav-due:text-is('1')")
    page.context.unroute(f"{base}/", counted_before)

    # With nothing sent lately, a page's own count stands: no second request for it.
    page.evaluate(f"localStorage.removeItem('{SENT}')")
    asked = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto(f"{base}/profile/")
    page.wait_for_load_state("networkidle")
    assert _nav_badge(page) == "1"
    assert not [url for url in asked if "/api/v1/reviews/due/" in url]
