"""In a real browser the Content-Security-Policy blocks nothing the site needs."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _violations(page) -> list[str]:
    seen: list[str] = []
    page.on(
        "console",
        lambda msg: seen.append(msg.text) if "Content Security Policy" in msg.text else None,
    )
    return seen


def test_api_docs_render_offline_under_the_policy(live_server, page):
    violations = _violations(page)
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title", timeout=20_000)
    assert "Study service API" in page.inner_text(".swagger-ui .info .title")
    page.goto(f"{live_server.url}/api/redoc/")
    page.wait_for_selector("h1", timeout=20_000)
    assert "Study service API" in page.inner_text("h1")
    # ReDoc's footer attribution points at its maker's logo online; the policy keeps
    # the page offline by blocking it, and nothing else is blocked.
    assert [v for v in violations if "redoc/logo-mini.svg" not in v] == []


def test_pages_with_scripts_run_under_the_policy(live_server, page, learner):
    violations = _violations(page)
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "s3cret-pass!")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/exercises/")
    # The parameters script (a static file now) shows only the chosen kind's fields.
    visible = page.locator(".kind-params:not([hidden])")
    assert visible.count() == 1
    page.goto(f"{live_server.url}/playground/")
    page.wait_for_load_state("networkidle")
    assert violations == []
