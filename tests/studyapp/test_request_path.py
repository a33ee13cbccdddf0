"""The request path: what a token API request skips, and what the pages and the
session-authenticated API keep (sessions, messages, CSRF, the policy header)."""

from __future__ import annotations

import datetime as dt

import pytest
import time_machine
from csp.constants import NONCE
from csp.decorators import csp_exempt, csp_update
from csp.middleware import CSPMiddleware
from csp.utils import build_policy
from django.contrib.sessions.models import Session
from django.db import connection
from django.http import HttpResponse
from django.test import Client, RequestFactory
from rest_framework.test import APIClient

from cards.models import Card, Deck
from studyapp.middleware import PageMessagesMiddleware, PolicyOnceCSPMiddleware

START = dt.datetime(2026, 3, 2, 12, tzinfo=dt.UTC)
LATER = START + dt.timedelta(days=2)


@pytest.fixture
def deck(db):
    deck = Deck.objects.create(slug="heads", title="Heads")
    for i in range(3):
        Card.objects.create(deck=deck, kind="recall", prompt=f"P{i}", answer=f"A{i}", position=i)
    return deck


@pytest.fixture
def enrolled(api, deck):
    with time_machine.travel(START, tick=False):
        assert api.post(f"/api/v1/decks/{deck.slug}/enroll/").status_code in (200, 201)
    return deck


def _due_card(client) -> int:
    return client.get("/api/v1/reviews/due/").json()["results"][0]["card"]["id"]


def test_a_token_request_sets_no_cookie_and_stores_no_session(api, enrolled):
    with time_machine.travel(LATER, tick=False):
        due = api.get("/api/v1/reviews/due/")
        review = api.post(
            "/api/v1/reviews/", {"card": _due_card(api), "result": "pass"}, format="json"
        )
    assert due.status_code == 200 and due.json()["count"] == 3
    assert review.status_code == 201, review.content
    for response in (due, review):
        assert not response.cookies, response.cookies
        assert "Cookie" not in response.get("Vary", "")
    assert not Session.objects.exists()


def test_a_token_request_never_reads_the_session_it_carries(api, learner, enrolled):
    # A browser that is also signed in sends its session cookie with the token.
    web = Client()
    web.force_login(learner)
    api.cookies = web.cookies
    with time_machine.travel(LATER, tick=False):
        response = api.get("/api/v1/reviews/due/")
    assert response.status_code == 200
    assert not response.cookies
    assert "Cookie" not in response.get("Vary", "")  # the session was never read


def test_the_session_api_still_refuses_an_unsafe_request_without_the_csrf_token(learner, enrolled):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(learner)
    with time_machine.travel(LATER, tick=False):
        card = _due_card(client)
        refused = client.post("/api/v1/reviews/", {"card": card, "result": "pass"}, format="json")
        assert refused.status_code == 403
        assert "CSRF" in refused.json()["detail"]
        assert client.get(f"/api/v1/reviews/?card={card}").json()["count"] == 0  # nothing changed
        # The page hands the token to its script in the cookie; with it the review records.
        client.get("/review/")
        token = client.cookies["csrftoken"].value
        accepted = client.post(
            "/api/v1/reviews/",
            {"card": card, "result": "pass"},
            format="json",
            HTTP_X_CSRFTOKEN=token,
        )
    assert accepted.status_code == 201, accepted.content


def test_pages_keep_sessions_csrf_and_messages(learner):
    client = Client(enforce_csrf_checks=True)
    page = client.get("/login/")
    assert page.status_code == 200
    assert "csrftoken" in page.cookies
    client.force_login(learner)
    assert client.post("/exercises/", {"kind": "attention"}).status_code == 403  # no token
    client.get("/exercises/")
    token = client.cookies["csrftoken"].value
    made = client.post("/exercises/", {"kind": "attention", "csrfmiddlewaretoken": token})
    assert made.status_code == 302, made.content
    shown = client.get(made["Location"])
    assert "New exercise" in shown.content.decode()  # the message, carried by the session
    assert "New exercise" not in client.get(made["Location"]).content.decode()  # shown once


def test_every_page_sets_the_csrf_cookie_and_later_requests_keep_it(learner, deck):
    # A page with no form (the landing page) still sets the cookie, so the requests a
    # browser sends at once after it (the page and the offline worker's copies) all
    # carry one secret instead of each making its own.
    client = Client(enforce_csrf_checks=True)
    landing = client.get("/")
    assert landing.status_code == 200 and "<form" not in landing.content.decode()
    token = landing.cookies["csrftoken"].value
    client.force_login(learner)
    for path in ("/", "/review/", "/profile/"):
        response = client.get(path, headers={"X-Study-Precache": "1"})
        assert response.status_code == 200, path
        # Django sends the cookie again to renew its age, never with a new secret.
        sent = response.cookies.get("csrftoken")
        assert sent is None or sent.value == token, path
    enrol = client.post(f"/decks/{deck.slug}/enroll/", {"csrfmiddlewaretoken": token})
    assert enrol.status_code == 302
    assert learner.review_states.count() == 3


def test_answers_that_are_not_pages_set_no_csrf_cookie(learner, deck):
    client = Client()
    assert "csrftoken" not in client.get("/healthz").cookies
    assert "csrftoken" not in client.get("/sw.js").cookies
    client.force_login(learner)
    assert "csrftoken" not in client.get("/api/v1/decks/").cookies


def test_message_storage_is_made_for_pages_only():
    middleware = PageMessagesMiddleware(lambda request: HttpResponse())
    page = RequestFactory().get("/exercises/")
    page.session = {}
    middleware(page)
    assert hasattr(page, "_messages")
    api_request = RequestFactory().get("/api/v1/reviews/due/")
    assert middleware(api_request).status_code == 200
    assert not hasattr(api_request, "_messages")


def test_the_policy_header_is_the_settings_policy_on_api_answers_and_pages(api, enrolled):
    expected = build_policy()
    with time_machine.travel(LATER, tick=False):
        assert api.get("/api/v1/reviews/due/")["Content-Security-Policy"] == expected
        assert api.get("/api/v1/nowhere/")["Content-Security-Policy"] == expected
    assert Client().get("/login/")["Content-Security-Policy"] == expected


def test_a_response_with_its_own_policy_gets_it_and_a_changed_setting_takes_effect(settings):
    middleware = PolicyOnceCSPMiddleware(
        csp_update({"img-src": ["https://example.org"]})(lambda request: HttpResponse())
    )
    response = middleware(RequestFactory().get("/"))
    assert "img-src 'self' data: https://example.org" in response["Content-Security-Policy"]
    plain = PolicyOnceCSPMiddleware(lambda request: HttpResponse())
    assert plain(RequestFactory().get("/"))["Content-Security-Policy"] == build_policy()
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"default-src": ["'none'"]}}
    assert plain(RequestFactory().get("/"))["Content-Security-Policy"] == "default-src 'none'"
    settings.CONTENT_SECURITY_POLICY_REPORT_ONLY = {"DIRECTIVES": {"default-src": ["'self'"]}}
    both = plain(RequestFactory().get("/"))
    assert both["Content-Security-Policy-Report-Only"] == "default-src 'self'"


def test_a_nonce_used_by_the_response_is_in_its_header(settings):
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"script-src": ["'self'", NONCE]}}

    def view(request):
        return HttpResponse(str(request.csp_nonce))

    response = PolicyOnceCSPMiddleware(view)(RequestFactory().get("/"))
    nonce = response.content.decode()
    assert f"script-src 'self' 'nonce-{nonce}'" in response["Content-Security-Policy"]
    unused = PolicyOnceCSPMiddleware(lambda request: HttpResponse())(RequestFactory().get("/"))
    assert unused["Content-Security-Policy"] == build_policy()
    assert "nonce-" not in unused["Content-Security-Policy"]


def test_headers_match_django_csp_for_every_kind_of_response(settings):
    settings.CONTENT_SECURITY_POLICY_REPORT_ONLY = {"DIRECTIVES": {"img-src": ["'self'"]}}
    views = [
        lambda request: HttpResponse(),
        csp_update({"img-src": ["https://example.org"]})(lambda request: HttpResponse()),
        csp_exempt()(lambda request: HttpResponse()),
    ]
    for view in views:
        ours = PolicyOnceCSPMiddleware(view)(RequestFactory().get("/"))
        theirs = CSPMiddleware(view)(RequestFactory().get("/"))
        for header in ("Content-Security-Policy", "Content-Security-Policy-Report-Only"):
            assert ours.get(header) == theirs.get(header)


@pytest.mark.postgres
def test_statements_are_bound_by_the_server_and_prepared_once_repeated(api, enrolled):
    assert connection.settings_dict["OPTIONS"]["server_side_binding"] is True
    with time_machine.travel(LATER, tick=False):
        for _ in range(6):  # psycopg prepares a statement its connection runs a fifth time
            assert api.get("/api/v1/reviews/due/").status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    assert any("cards_reviewstate" in statement for statement in prepared), prepared
