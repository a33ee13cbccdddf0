"""What a stranger sees when a page is missing or the server fails: the site's own
pages, with the policy header, even with the database gone."""

from __future__ import annotations

import pytest
from django.db import OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test import Client
from django.urls import path

from studyapp import urls as site_urls
from studyapp import views


def _explode(request):
    raise RuntimeError("a bug in a view")


# The site's routes plus one view that fails.
urlpatterns = [path("explode/", _explode), *site_urls.urlpatterns]
handler404 = site_urls.handler404
handler500 = site_urls.handler500


def _assert_site_page(response):
    html = response.content.decode()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    assert 'href="/static/css/site.css"' in html
    assert '<a href="/">Back to the start page</a>' in html
    assert "script-src 'self'" in response["Content-Security-Policy"]
    return html


@pytest.mark.django_db
def test_the_404_page_is_a_site_page_that_names_the_path(client):
    response = client.get("/no/such/<page>/")
    assert response.status_code == 404
    html = _assert_site_page(response)
    assert "<h1>Page not found</h1>" in html
    assert "/no/such/%3Cpage%3E/" in html and "<page>" not in html
    assert 'class="site-header"' in html


@pytest.fixture
def exploding(settings):
    settings.ROOT_URLCONF = __name__
    return Client(raise_request_exception=False)


@pytest.mark.django_db
def test_the_500_page_says_what_happened_and_what_to_do(exploding):
    response = exploding.get("/explode/")
    assert response.status_code == 500
    html = _assert_site_page(response)
    assert "<h1>Something went wrong on our side</h1>" in html
    assert "Try again in a minute" in html


@pytest.mark.django_db
def test_the_500_page_renders_with_the_database_gone(exploding, learner, monkeypatch):
    exploding.force_login(learner)  # a session the page must not try to read

    def refuse(self):
        raise OperationalError("connection refused")

    monkeypatch.setattr(BaseDatabaseWrapper, "ensure_connection", refuse)
    response = exploding.get("/explode/")
    assert response.status_code == 500
    assert "Something went wrong on our side" in _assert_site_page(response)


def test_a_500_page_that_cannot_render_falls_back_to_plain_words(rf, monkeypatch):
    def broken(name):
        raise ValueError("Missing staticfiles manifest entry for 'css/site.css'")

    monkeypatch.setattr(views.loader, "get_template", broken)
    response = views.server_error(rf.get("/explode/"))
    assert response.status_code == 500
    html = response.content.decode()
    assert '<meta name="viewport"' in html and '<a href="/">' in html


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/healthz", "/readyz"])
def test_health_answers_carry_the_policy(client, url):
    response = client.get(url)
    assert response.status_code in (200, 503)
    assert "default-src 'self'" in response["Content-Security-Policy"]


@pytest.mark.django_db
def test_the_guards_refusals_carry_the_policy(client):
    response = client.get("/", {"q": "\x00"})
    assert response.status_code == 400
    assert "default-src 'self'" in response["Content-Security-Policy"]
