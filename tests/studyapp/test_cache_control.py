"""What a browser may keep: Cache-Control on every page, and whom a page names.

Every web URL pattern is asked for, signed in and signed out, with objects of the learner's
own behind it (a lab with their code, an exercise with their attempts): each answer is
``private, no-store`` but the pages the offline worker keeps, or an answer that says
something stricter of its own.
"""

from __future__ import annotations

from http.cookies import SimpleCookie

import pytest
from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.tokens import default_token_generator
from django.contrib.sessions.backends.db import SessionStore
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from cards.models import Card, Deck
from exercises import services as exercise_services
from labs import selectors as lab_selectors
from labs.models import Submission
from studyapp.cache_control import (
    KEPT,
    KEPT_PAGES,
    LEARNER_COOKIE,
    LEARNER_HEADER,
    NOBODY,
    PRIVATE,
    PrivatePagesMiddleware,
    learner_key,
)

pytestmark = pytest.mark.django_db

# Not the learner's pages: the admin and the API have their own tests; /sw.js, the health
# checks and the metrics set Cache-Control themselves (checked below all the same).
OUTSIDE = ("admin/", "api/")
OWN_HEADER = {"service-worker", "healthz", "readyz"}


def _web_patterns(patterns=None, prefix=""):
    for entry in patterns if patterns is not None else get_resolver().url_patterns:
        route = prefix + str(entry.pattern)
        if route.startswith(OUTSIDE):
            continue
        if isinstance(entry, URLResolver):
            yield from _web_patterns(entry.url_patterns, route)
        elif isinstance(entry, URLPattern) and entry.name:
            yield entry.name, route


@pytest.fixture
def objects(learner):
    """Something of the learner's behind every pattern that takes an argument."""
    deck = Deck.objects.create(slug="heads", title="Heads")
    card = Card.objects.create(deck=deck, kind="recall", prompt="P", answer="A", position=1)
    lab = next(iter(lab_selectors.labs_list()))
    submission = Submission.objects.create(
        learner=learner,
        lab=lab.slug,
        code="def softmax(x):\n    return 'the learner code'\n",
        status=Submission.Status.DONE,
        passed=False,
        tests=[],
        seed=1,
    )
    exercise = exercise_services.exercise_create(owner=learner, kind="attention", params={})
    return {
        "slug": lab.slug,
        "pk": {"card": card.pk, "exercise": exercise.pk, "lab": submission.pk},
        "uidb64": urlsafe_base64_encode(force_bytes(learner.pk)),
        "token": default_token_generator.make_token(learner),
        "deck": deck.slug,
    }


def _kwargs(name: str, route: str, objects) -> dict[str, object]:
    kwargs: dict[str, object] = {}
    if "<slug:slug>" in route:
        kwargs["slug"] = objects["deck"] if "decks/" in route else objects["slug"]
    if "<int:pk>" in route:
        family = "card" if "cards/" in route else "lab" if "labs/" in route else "exercise"
        kwargs["pk"] = objects["pk"][family]
    if "<uidb64>" in route:
        kwargs["uidb64"] = objects["uidb64"]
    if "<token>" in route or "<str:token>" in route:
        kwargs["token"] = objects["token"]
    return kwargs


def _urls(objects) -> list[tuple[str, str]]:
    urls = [
        (name, reverse(name, kwargs=_kwargs(name, route, objects)))
        for name, route in _web_patterns()
    ]
    assert len(urls) > 30, urls  # every app's pages, not a handful
    return urls


def _assert_header(name: str, url: str, response, *, signed_in: bool) -> None:
    control = response["Cache-Control"]
    if name in OWN_HEADER:
        assert "no-store" in control or "no-cache" in control, (url, control)
    elif name in KEPT_PAGES and signed_in and response.status_code == 200:
        assert control == KEPT, (url, control)
    else:
        assert control == PRIVATE or "no-store" in control, (url, response.status_code, control)


def test_every_page_signed_in_is_private_no_store_but_the_kept_ones(learner, objects):
    client = Client()
    client.force_login(learner)
    seen = set()
    for name, url in _urls(objects):
        response = client.get(url)
        assert response.status_code < 500, url
        _assert_header(name, url, response, signed_in=True)
        if name not in OWN_HEADER:
            assert response[LEARNER_HEADER] in (learner_key(learner), NOBODY), url
        seen.add(name)
        if name == "password_reset_confirm":
            client.force_login(learner)  # the reset page may end the session
    assert {"profile", "lab-page", "exercise-page", "account-export", "review"} <= seen
    # The pages that carry what is the learner's own, by name.
    for url in ("/profile/", f"/labs/{objects['slug']}/", "/profile/export/"):
        assert client.get(url)["Cache-Control"] == PRIVATE, url


def test_every_page_signed_out_is_private_no_store(db, objects):
    client = Client()
    for name, url in _urls(objects):
        response = client.get(url)
        assert response.status_code < 500, url
        _assert_header(name, url, response, signed_in=False)
        if name not in OWN_HEADER:
            assert response[LEARNER_HEADER] == NOBODY, url


def test_posts_and_api_answers_are_private_no_store(learner, api, objects):
    client = Client()
    client.force_login(learner)
    assert client.post("/profile/", {"timezone": "nowhere"})["Cache-Control"] == PRIVATE
    assert api.get("/api/v1/me/")["Cache-Control"] == PRIVATE
    assert api.get("/api/v1/reviews/due/")["Cache-Control"] == PRIVATE
    # An answer that sets its own header keeps it.
    assert client.get("/sw.js")["Cache-Control"] == "no-cache"


def test_the_kept_pages_are_the_ones_the_worker_lists(db):
    body = Client().get("/sw.js").content.decode()
    assert f"const PAGES = {[reverse(name) for name in KEPT_PAGES]};".replace("'", '"') in body


def _cookie(response, name: str):
    return response.cookies.get(name)


def test_the_learner_cookie_lives_as_long_as_the_session_cookie(learner):
    client = Client()
    response = client.post("/login/", {"username": "alice", "password": "s3cret-pass!"})
    assert response.status_code == 302
    session, mine = (
        _cookie(response, settings.SESSION_COOKIE_NAME),
        _cookie(response, LEARNER_COOKIE),
    )
    assert mine.value == learner_key(learner)
    assert mine["max-age"] == session["max-age"] == settings.SESSION_COOKIE_AGE
    assert mine["path"] == session["path"]
    assert not mine["httponly"] and session["httponly"]
    assert mine["samesite"] == session["samesite"]

    # Present and right: a page sends neither again.
    page = client.get("/")
    assert page[LEARNER_HEADER] == learner_key(learner)
    assert LEARNER_COOKIE not in page.cookies and settings.SESSION_COOKIE_NAME not in page.cookies

    # Missing (a session from before the cookie): both are sent again, with one lifetime.
    client.cookies.pop(LEARNER_COOKIE)
    page = client.get("/profile/")
    assert _cookie(page, LEARNER_COOKIE).value == learner_key(learner)
    assert (
        _cookie(page, LEARNER_COOKIE)["max-age"]
        == _cookie(page, settings.SESSION_COOKIE_NAME)["max-age"]
    )

    # Signing out deletes it with the session cookie.
    out = client.post("/logout/")
    assert out[LEARNER_HEADER] == NOBODY
    assert _cookie(out, LEARNER_COOKIE)["max-age"] == 0
    assert _cookie(out, settings.SESSION_COOKIE_NAME)["max-age"] == 0


def test_a_learner_cookie_without_a_session_is_deleted(db):
    client = Client()
    client.cookies = SimpleCookie({LEARNER_COOKIE: "0123456789abcdef0123456789abcdef"})
    response = client.get("/login/")
    assert response[LEARNER_HEADER] == NOBODY
    assert _cookie(response, LEARNER_COOKIE)["max-age"] == 0
    assert "data-learner" not in response.content.decode()


def test_a_browser_session_cookie_makes_a_browser_session_learner_cookie(learner, settings):
    settings.SESSION_EXPIRE_AT_BROWSER_CLOSE = True
    response = Client().post("/login/", {"username": "alice", "password": "s3cret-pass!"})
    assert _cookie(response, LEARNER_COOKIE).value == learner_key(learner)
    assert _cookie(response, LEARNER_COOKIE)["max-age"] == ""
    assert _cookie(response, LEARNER_COOKIE)["expires"] == ""


def test_the_key_is_opaque_stable_and_per_learner(learner, other_learner, settings):
    key = learner_key(learner)
    assert len(key) == 32 and int(key, 16) >= 0
    assert key == learner_key(learner)
    assert key != learner_key(other_learner)
    settings.SECRET_KEY = "another secret of at least fifty characters, for this test only"
    assert learner_key(learner) != key


def test_a_token_user_is_not_the_browsers_learner(api):
    response = api.get("/api/v1/me/")
    assert LEARNER_HEADER not in response
    assert LEARNER_COOKIE not in response.cookies


def _through_middleware(learner, status: int):
    request = RequestFactory().get("/profile/")
    request.session = SessionStore()
    request.session[SESSION_KEY] = str(learner.pk)
    request.session.save()
    request.session.modified = False
    request.user = learner
    return PrivatePagesMiddleware(lambda r: HttpResponse(status=status))(request), request


def test_a_server_error_sends_no_learner_cookie_as_it_saves_no_session(learner):
    response, request = _through_middleware(learner, 500)
    assert LEARNER_COOKIE not in response.cookies
    assert response[LEARNER_HEADER] == learner_key(learner)
    assert response["Cache-Control"] == PRIVATE
    response, request = _through_middleware(learner, 200)
    assert response.cookies[LEARNER_COOKIE].value == learner_key(learner)
    assert request.session.modified  # so the session middleware sends its cookie too
