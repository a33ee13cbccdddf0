"""The dashboard, the profile and the error pages at a phone's and a laptop's width.

Card prompts show their formulas rendered (never raw TeX, never cut mid-formula), the
forecast names its two colours, deleting the account looks destructive and has its
password beside it, and the 404, 403, 400 and 500 pages are the site's own with a way
back, with DEBUG off, even before the static files are collected.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.test import Client
from django.urls import path
from django.utils import timezone

from cards import services as card_services
from cards.models import Card
from cards.services.controls import card_suspend
from cards.services.reports import report_create
from cards.templatetags.study import excerpt
from studyapp import urls as site_urls

from .conftest import log_in
from .test_phone_layout import WIDTHS, assert_ring, contrast, layout_view, make_walk

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(params=list(WIDTHS))
def view(request, browser):
    yield from layout_view(browser, request.param)


@pytest.fixture
def walk(axe, screenshot):
    return make_walk(axe, screenshot)


# A prompt whose formulas fall around the cut of an excerpt.
LONG_PROMPT = (
    r"Given $A \in \mathbb{R}^{3 \times 4}$ and $B \in \mathbb{R}^{4 \times 2}$, what is the "
    r"shape of the product $AB$, and how many multiplications does it take: "
    r"$(3, 2)$ with $3 \cdot 4 \cdot 2 = 24$?"
)


@pytest.fixture
def suspended_and_reported(deck, learner):
    card = Card.objects.create(
        deck=deck, key="shapes", kind=Card.Kind.RECALL, prompt=LONG_PROMPT, answer="(3, 2)"
    )
    card_services.enroll(learner=learner, deck=deck, at=timezone.now())
    card_suspend(learner=learner, card_id=card.pk)
    report_create(
        learner=learner,
        card_id=card.pk,
        text=r"The answer should say why $AB$ is $(3, 2)$ and not $(2, 3)$; "
        r"the inner sizes $4$ and $4$ must agree, which the card never says out loud.",
    )
    return card


def test_an_excerpt_keeps_formulas_whole_and_renders_them():
    html = str(excerpt(LONG_PROMPT, 90))
    assert "$" not in html
    assert html.endswith("…") and not html.endswith(" …")
    assert html.count("<math") >= 2
    # Every formula opened is closed: none is cut.
    assert html.count("<math") == html.count("</math>")
    assert "Given" in html and "multiplications" not in html
    # Markdown and markup are reduced to their text, and that text is escaped.
    assert str(excerpt("**Bold** and `code` <b>x</b>", 90)) == "Bold and code x"
    assert str(excerpt("if a < b", 90)) == "if a &lt; b"
    # A formula that will not convert shows its source without dollars.
    assert "$" not in str(excerpt(r"Broken $\frac{1}{$ here", 90))
    assert str(excerpt("", 90)) == ""


def test_the_dashboard_renders_suspended_prompts_and_names_the_forecast_colours(
    live_server, view, walk, learner, suspended_and_reported
):
    log_in(view.context, live_server, learner)
    view.goto(f"{live_server.url}/")
    listed = view.locator("#suspended-cards li").first
    assert "$" not in listed.inner_text()
    assert listed.locator("math").count() >= 2
    assert listed.get_by_role("button", name="Resume").count() == 1
    # The button's name carries the prompt's words, the formulas read as math.
    name = listed.get_by_role("button").evaluate("b => b.getAttribute('aria-labelledby')")
    assert name.startswith("resume-") and "suspended-" in name
    legend = view.locator("#forecast-legend li")
    assert legend.all_inner_texts() == ["Today, with overdue cards", "Later days"]
    bars = view.evaluate(
        "() => [...document.querySelectorAll('#forecast-chart rect')].map(r => r.getAttribute('fill'))"
    )
    swatches = view.evaluate(
        "() => [...document.querySelectorAll('#forecast-legend .swatch')]"
        ".map(s => getComputedStyle(s).backgroundColor)"
    )
    assert swatches == ["rgb(179, 38, 30)", "rgb(31, 95, 191)"]
    bars = [fill for fill in bars if fill != "transparent"]  # the tooltip targets
    assert bars[0] == "#b3261e" and set(bars[1:]) == {"#1f5fbf"}
    for swatch in swatches:  # a swatch is a graphic: 3:1 against the panel
        assert contrast(swatch, "rgb(255, 255, 255)") >= 3
    walk(view, "dashboard")


def test_the_profile_renders_reports_and_sets_the_deletion_apart(
    live_server, view, walk, learner, suspended_and_reported
):
    log_in(view.context, live_server, learner)
    view.goto(f"{live_server.url}/profile/")
    reports = view.locator("#my-reports tbody tr").first
    assert "$" not in reports.inner_text()
    assert reports.locator("math").count() >= 3
    save = view.get_by_role("button", name="Save profile")
    delete = view.get_by_role("button", name="Delete my account")
    style = "b => [getComputedStyle(b).backgroundColor, getComputedStyle(b).color]"
    assert delete.evaluate(style) != save.evaluate(style)
    assert delete.evaluate(style) == ["rgb(179, 38, 30)", "rgb(255, 255, 255)"]
    # The password it needs is beside it, in the same red-bordered box.
    password = view.get_by_label("Your password")
    zone = "el => el.closest('.danger-zone')?.id"
    assert password.evaluate(zone) == delete.evaluate(zone) == "account-delete"
    if view.width_name == "laptop":
        p, d = password.bounding_box(), delete.bounding_box()
        assert p and d and d["x"] > p["x"] + p["width"] and d["y"] < p["y"] + p["height"]
    assert_ring(view, "#account-delete button.danger", "profile danger")
    walk(view, "profile")
    # A wrong password: nothing deleted, the error beside the field, still axe-clean.
    password.fill("not-my-password")
    delete.click()
    view.wait_for_selector("#account-delete .errorlist")
    assert learner.__class__.objects.filter(pk=learner.pk).exists()
    walk(view, "profile-delete-error", tab=False)


def _explode(request):
    raise RuntimeError("a bug in a view")


def _forbidden(request):
    raise PermissionDenied


def _garbled(request):
    raise SuspiciousOperation("a malformed request")


urlpatterns = [
    path("explode/", _explode),
    path("forbidden/", _forbidden),
    path("garbled/", _garbled),
    *site_urls.urlpatterns,
]
handler400 = site_urls.handler400
handler404 = site_urls.handler404
handler500 = site_urls.handler500


@pytest.fixture
def production(settings):
    settings.DEBUG = False
    settings.ROOT_URLCONF = __name__
    return settings


@pytest.mark.parametrize(
    ("url", "status", "heading"),
    [
        ("/no/such/page/", 404, "Page not found"),
        ("/explode/", 500, "Something went wrong on our side"),
        ("/forbidden/", 403, "You may not open this page"),
        ("/garbled/", 400, "The request could not be read"),
    ],
)
def test_error_pages_are_site_pages_with_a_way_back(
    live_server, view, walk, learner, production, url, status, heading
):
    log_in(view.context, live_server, learner)
    response = view.goto(f"{live_server.url}{url}")
    assert response is not None and response.status == status
    assert view.locator("h1").inner_text() == heading
    assert view.locator("header.site-header nav a").count() >= 4
    view.get_by_role("link", name="Back to the start page").click()
    view.wait_for_url(f"{live_server.url}/")
    assert view.locator("h1").inner_text() == "Dashboard"
    view.goto(f"{live_server.url}{url}")
    # The site's stylesheet applies: the header is dark, the page is not bare.
    assert (
        view.evaluate(
            "() => getComputedStyle(document.querySelector('.site-header')).backgroundColor"
        )
        == "rgb(29, 36, 48)"
    )
    walk(view, f"error-{status}")


@pytest.mark.parametrize("url", ["/no/such/page/", "/explode/", "/forbidden/", "/garbled/"])
def test_error_pages_keep_the_layout_before_the_static_files_are_collected(
    production, learner, url, tmp_path
):
    """With the hashed-name storage of production and no collectstatic run, a page that
    links its stylesheet by a hashed name fails; the error pages link the plain name."""
    # Nothing collected, whatever a checkout's own staticfiles/ holds.
    production.STATIC_ROOT = tmp_path
    production.STORAGES = {
        **production.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"},
    }
    client = Client(raise_request_exception=False)
    client.force_login(learner)
    response = client.get(url)
    html = response.content.decode()
    assert response.status_code in (400, 403, 404, 500)
    assert 'href="/static/css/site.css"' in html
    assert 'class="site-header"' in html and '<a class="skip-link" href="#main">' in html
    assert '<a href="/">Back to the start page</a>' in html


def test_a_refused_form_gets_a_site_page(production, learner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(learner)
    response = client.post("/profile/", {"email": "a@example.org"})
    assert response.status_code == 403
    html = response.content.decode()
    assert "<h1>This form has expired</h1>" in html and 'class="site-header"' in html
    assert '<a href="/">Back to the start page</a>' in html
