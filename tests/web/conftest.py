"""Fixtures of the learner pages: a small deck and a headless Chromium.

``live_server`` runs in a thread of this process, so the tests may touch the
database directly while the browser drives the pages; that is why Django's
async-safety guard is off here.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest
from django.test import Client

from cards.models import Card, Deck

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
# How long a browser test waits for a state (an element, a page, a condition) before it
# fails. It is a deadline, not a pause: every wait ends as soon as its state holds. It is
# generous because a machine running the suite beside other work (two CPU hogs on two
# cores) can take several seconds to serve and render a page.
STATE_TIMEOUT_MS = 60_000
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def deck(db) -> Deck:
    deck = Deck.objects.create(
        slug="attention-basics",
        title="Attention basics",
        description="Scores, softmax weights and outputs of one head.",
    )
    Card.objects.create(
        deck=deck,
        key="why-scale",
        kind=Card.Kind.RECALL,
        prompt=r"Why divide the scores by $\sqrt{d_k}$?",
        answer="Large scores saturate the softmax toward **one-hot**, where gradients are tiny.",
        position=1,
    )
    Card.objects.create(
        deck=deck,
        key="weights-by-hand",
        kind=Card.Kind.EXERCISE,
        prompt="Compute one attention head by hand.",
        exercise={"kind": "attention", "params": {"n": 2, "d_k": 2, "d_v": 2}},
        position=2,
    )
    return deck


def log_in(context, live_server, user) -> None:
    """Give a browser context the session cookie of ``user``."""
    client = Client()
    client.force_login(user)
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )


def _refuse_as_offline(route) -> None:
    route.abort("internetdisconnected")


def go_offline(context) -> None:
    """Take a browser context offline: Chromium's offline emulation, and the API refused
    as an offline browser would refuse it.

    The emulation alone lets through, now and then, a request that the page sends while
    a freshly activated service worker passes it on (microsoft/playwright#2311); the
    route makes every API call fail as the learner's offline phone would.
    """
    context.set_offline(True)
    context.route("**/api/**", _refuse_as_offline)


def go_online(context) -> None:
    context.unroute("**/api/**", _refuse_as_offline)
    context.set_offline(False)


# Uncaught script errors (exceptions and unhandled rejections) of every page a test opens.
PAGE_ERRORS: list[str] = []


class WatchedBrowser:
    """Chromium, whose every page reports its uncaught script errors to ``PAGE_ERRORS``."""

    def __init__(self, browser):
        self._browser = browser

    def __getattr__(self, name):
        return getattr(self._browser, name)

    def new_context(self, **options):
        context = self._browser.new_context(**options)
        context.on("page", _watch)
        return context


# The pages of the running test, so that a failure can say where each one stood.
OPEN_PAGES: list = []


def _watch(page) -> None:
    OPEN_PAGES.append(page)
    page.on("pageerror", lambda error: PAGE_ERRORS.append(f"{page.url}: {error}"))


def _where(page) -> str:
    if page.is_closed():
        return "(closed)"
    try:
        text = page.inner_text("body", timeout=2_000)
    except Exception as exc:  # the failure's report must not fail in turn
        text = f"(its text could not be read: {exc})"
    return f"{page.url}\n{text[:1500]}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser test's report says each open page's address and text."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed and OPEN_PAGES:
        report.sections.append(("open pages", "\n\n".join(_where(page) for page in OPEN_PAGES)))
    if report.when == "teardown":
        OPEN_PAGES.clear()


@pytest.fixture(autouse=True)
def no_script_errors():
    """Every browser test fails on a script error in any page it opened."""
    PAGE_ERRORS.clear()
    yield
    errors, PAGE_ERRORS[:] = list(PAGE_ERRORS), []
    assert not errors, "uncaught script errors:\n" + "\n".join(errors)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    sync_api.expect.set_options(timeout=STATE_TIMEOUT_MS)
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield WatchedBrowser(instance)
        instance.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(STATE_TIMEOUT_MS)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def phone(browser):
    context = browser.new_context(
        viewport={"width": 390, "height": 844},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
    )
    context.set_default_timeout(STATE_TIMEOUT_MS)
    page = context.new_page()
    yield page
    context.close()


# The widths most page tests run at, for ``open_view``.
WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


def open_view(browser, width: str, viewport: dict, **options):
    """A page at one named width (``page.width_name``, for screenshots), closed after the
    test: a phone width gets a phone's pixel ratio and touch.

    Pass ``service_workers="block"`` where a test is about layout or accessibility, not
    about working offline: the page then runs without the worker, which would otherwise
    install and cache the app shell in every new context.
    """
    phone = width == "phone"
    context = browser.new_context(
        viewport=viewport,
        device_scale_factor=2 if phone else 1,
        is_mobile=phone,
        has_touch=phone,
        **options,
    )
    context.set_default_timeout(STATE_TIMEOUT_MS)
    page = context.new_page()
    page.width_name = width
    yield page
    context.close()


# Screenshots of the states the tests walk through, for a person to look at: taken with
# STUDY_SCREENSHOTS=1 (a fifth of a layout test's time goes into them, and no test reads
# them back).
TAKE_SCREENSHOTS = os.environ.get("STUDY_SCREENSHOTS") == "1"


@pytest.fixture
def screenshot():
    if TAKE_SCREENSHOTS:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str, full_page: bool = True) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        if TAKE_SCREENSHOTS:
            page.screenshot(path=str(path), full_page=full_page)
        return path

    return take


WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]


@pytest.fixture(scope="session")
def axe():
    module = pytest.importorskip("axe_playwright_python.sync_playwright")
    return module.Axe()


# Only the violations come back with their nodes: the passes of a large page are ten
# times the size, and serialising them took half of each check.
AXE_OPTIONS = {"runOnly": {"type": "tag", "values": WCAG_AA}, "resultTypes": ["violations"]}


def assert_axe_clean(axe, page, name: str) -> None:
    """Fail on any axe violation of the WCAG 2.2 AA rules, naming up to five nodes each.

    axe-core is put into a document once, not before every check of it."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(axe.axe_script)
    violations = page.evaluate("options => axe.run(document, options)", AXE_OPTIONS)["violations"]
    report = [
        f"{v['id']} ({v['impact']}): {v['help']} at "
        + "; ".join(" ".join(node["target"]) for node in v["nodes"][:5])
        for v in violations
    ]
    assert not violations, f"{name} at {page.width_name} width:\n" + "\n".join(report)


def axe_check(axe, screenshot, page, shot: str, name: str) -> None:
    """Save the page as it stands as ``shot``, fail on any axe violation (WCAG 2.2 AA rules)
    and on headings that do not start at h1 or skip a level."""
    screenshot(page, shot)
    assert_axe_clean(axe, page, name)
    levels = page.eval_on_selector_all(
        "h1, h2, h3, h4, h5, h6", "hs => hs.map(h => Number(h.tagName[1]))"
    )
    assert levels[:1] == [1], f"{name}: the first heading is not an h1: {levels}"
    jumps = [(a, b) for a, b in itertools.pairwise(levels) if b > a + 1]
    assert not jumps, f"{name}: headings skip a level: {levels}"


def settle(page) -> None:
    """Wait until the page has handled what was just sent to it: a frame has been drawn
    and the tasks queued before it have run (a state, not a pause). For checks that
    something did *not* happen after a key or a click."""
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))")


def wait_until(page, expression: str, timeout: float = STATE_TIMEOUT_MS / 1000) -> None:
    """Poll ``expression`` in the page until it is truthy.

    Playwright's ``wait_for_function`` compiles its string with eval(), which the site's
    Content-Security-Policy forbids; ``page.evaluate`` goes through the debugger instead.
    """
    import time

    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for: {expression}")
        page.wait_for_timeout(50)
