"""The review page offline against the production build: gunicorn behind nginx, DEBUG off,
the static files collected with the manifest storage (hashed names), the site's own
database (tests/production_stack.py). The service worker must keep the page and the
hashed files it links, and open it again with the network gone.
"""

from __future__ import annotations

import os

import pytest

from tests.production_stack import DEMO_PASSWORD, nginx_binary, running_stack

from .conftest import go_offline, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def site():
    if nginx_binary() is None:
        if os.environ.get("REQUIRE_SERVICES") == "1":
            pytest.fail("REQUIRE_SERVICES=1 but nginx is not installed")
        pytest.skip("nginx is not installed (apt-get install nginx)")
    with running_stack() as stack:
        yield stack


def test_the_review_page_opens_offline_from_the_production_build(site, page):
    base = f"http://127.0.0.1:{site.port}"
    page.goto(f"{base}/login/")
    page.fill("#id_username", "demo")
    page.fill("#id_password", DEMO_PASSWORD)
    page.press("#id_password", "Enter")
    page.wait_for_url(f"{base}/")
    page.goto(f"{base}/review/")
    first = page.get_attribute("#review-card", "data-card")
    assert first
    wait_until(page, "navigator.serviceWorker.controller !== null")
    # Kept: the review page and the hashed files it links.
    kept = (
        "caches.keys().then(ns => Promise.all(ns.map(n => caches.open(n).then(c => c.keys()))))"
        ".then(ls => ls.flat().map(r => new URL(r.url).pathname))"
    )
    wait_until(page, f"{kept}.then(paths => paths.includes('/review/'))")
    paths = page.evaluate(kept)
    assert any(p.startswith("/static/css/site.") and p != "/static/css/site.css" for p in paths)

    go_offline(page.context)
    page.reload()
    assert page.get_attribute("html", "data-offline-copy") == "1"
    assert page.inner_text("h1") == "Review"
    assert page.get_attribute("#review-card", "data-card") == first
    # Its styles and scripts came from the cache, under their hashed names.
    assert page.evaluate(
        "getComputedStyle(document.querySelector('.site-header')).backgroundColor"
    ) not in ("rgba(0, 0, 0, 0)", "transparent")
    assert page.evaluate("typeof window.studyOffline") == "object"
    assert " ERROR " not in site.log("gunicorn")
