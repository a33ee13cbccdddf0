"""Headers and assets: CSP without inline script, offline API docs, NUL queries, time zones."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders

from cards.models import Card, Deck, LearnerProfile

ROOT = Path(__file__).resolve().parent.parent
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
INLINE_HANDLER = re.compile(r"\son[a-z]+\s*=", re.IGNORECASE)


def _csp(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in header.split(";") if part.strip()}


@pytest.fixture
def deck(db):
    deck = Deck.objects.create(slug="attention", title="Attention")
    Card.objects.create(deck=deck, kind="recall", prompt="What is $QK^T$?", answer="Scores")
    return deck


@pytest.mark.django_db
def test_every_page_has_a_csp_that_allows_no_inline_script(client, learner, deck):
    anonymous = ["/", "/login/", "/signup/", "/password/reset/", "/api/docs/", "/api/redoc/"]
    for url in anonymous:
        response = client.get(url)
        assert response.status_code == 200, url
        policy = _csp(response)
        assert policy["script-src"] == ["'self'"], url
        assert (
            "'unsafe-inline'" not in policy["script-src"]
            and "'unsafe-eval'" not in policy["script-src"]
        )
        assert policy["object-src"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"]

    client.force_login(learner)
    client.post("/decks/attention/enroll/")
    for url in ["/", "/review/", "/exercises/", "/playground/", "/profile/", "/password/change/"]:
        response = client.get(url)
        assert response.status_code == 200, url
        assert "Content-Security-Policy" in response, url
        html = response.content.decode()
        assert not INLINE_SCRIPT.search(html), f"inline <script> on {url}"
        assert not INLINE_HANDLER.search(html), f"inline event handler on {url}"


def test_no_template_holds_an_inline_script():
    for path in (ROOT / "templates").rglob("*.html"):
        text = path.read_text()
        assert not INLINE_SCRIPT.search(text), path
        assert not INLINE_HANDLER.search(text), path


@pytest.mark.django_db
def test_api_docs_are_served_from_the_installed_sidecar(client):
    for url, asset in (
        ("/api/docs/", "swagger-ui-bundle.js"),
        ("/api/redoc/", "redoc.standalone.js"),
    ):
        html = client.get(url).content.decode()
        scripts = re.findall(r'<script[^>]*src="([^"]+)"', html)
        assert scripts, url
        assert all(src.startswith("/") and "//" not in src for src in scripts), scripts
        assert any(asset in src for src in scripts), scripts
        assert "cdn" not in html.lower() and "googleapis" not in html
    assert finders.find("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
    assert finders.find("drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js")
    # Swagger UI's setup is a script file of its own, not inline.
    setup = client.get("/api/docs/?script=")
    assert setup.status_code == 200
    assert "SwaggerUIBundle" in setup.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    ["/api/v1/cards/?search=a%00b", "/api/v1/reviews/?card=%00", "/api/v1/decks/?x=\x00"],
)
def test_a_nul_in_the_query_is_a_400_with_a_string_detail(api, url):
    response = api.get(url)
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert isinstance(detail, str) and "NUL" in detail


@pytest.mark.django_db
def test_a_nul_in_body_text_is_a_400_naming_the_field(staff_api, deck):
    card = deck.cards.first()
    response = staff_api.patch(
        f"/api/v1/cards/{card.pk}/", {"prompt": "before\u0000after"}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {"prompt": ["Null characters are not allowed."]}


def test_a_database_refusing_nul_is_a_string_detail_not_a_list():
    from django.db import DataError

    from studyapp.common.errors import exception_handler

    nul = exception_handler(DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes"), {})
    assert nul.status_code == 400
    assert nul.data == {"detail": "Text may not contain the NUL character (\\u0000)."}
    big = exception_handler(DataError("integer out of range"), {})
    assert big.status_code == 400 and big.data == {
        "detail": "A value is out of range for its field."
    }


@pytest.mark.django_db
def test_a_nul_in_a_page_query_is_a_plain_400(client):
    response = client.get("/login/?next=%00")
    assert response.status_code == 400
    assert "NUL" in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("zone", ["localtime", "Factory", "posixrules", "right/UTC", "Mars/Base"])
def test_only_iana_zones_of_the_pinned_tzdata_are_accepted(api, anon_api, learner, zone):
    patched = api.patch("/api/v1/me/", {"timezone": zone}, format="json")
    assert patched.status_code == 400 and "timezone" in patched.json()
    assert LearnerProfile.objects.get(user=learner).timezone == "UTC"
    registered = anon_api.post(
        "/api/v1/auth/register/",
        {"username": "zed", "password": "a-long-passphrase", "timezone": zone},
        format="json",
    )
    assert registered.status_code == 400 and "timezone" in registered.json()


@pytest.mark.django_db
def test_real_zones_and_legacy_aliases_are_accepted(api):
    for zone in ("Europe/Berlin", "America/Argentina/Buenos_Aires", "UTC", "US/Eastern"):
        assert api.patch("/api/v1/me/", {"timezone": zone}, format="json").status_code == 200


def test_the_web_form_offers_only_tzdata_zones():
    from cards.forms import timezone_choices

    names = {name for name, _label in timezone_choices()}
    assert "Europe/Berlin" in names and "UTC" in names
    assert not names & {"localtime", "Factory", "posixrules"}


def test_tzdata_is_a_pinned_dependency():
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(dep.startswith("tzdata") for dep in deps)
