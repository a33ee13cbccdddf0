"""Every page in production mode: the static files collected with the production storage
(hashed names in a manifest), and every setting ``DJANGO_DEBUG=0`` changes, computed by
the settings module itself and applied to this process.

Each web page of the URL configuration is opened signed out, as a learner and as staff
(with the admin index), then /sw.js, every file it keeps and the web app manifest, and
every static file a page links: no 5xx and no ERROR log record. The pages are opened
with Django's test client, in process, so each has the objects its URL needs (a deck, an
exercise, a lab submission) and the log records are caught as records; the same build
served by gunicorn behind nginx is tests/test_production_proxy.py's and
tests/web/test_production_offline.py's.
"""

from __future__ import annotations

import json
import logging
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from django.contrib.auth.tokens import default_token_generator
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from cards.models import Card, Deck
from exercises.services import exercise_create
from labs.catalogue import LABS
from labs.models import Submission

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = ROOT / "studyapp" / "settings.py"
# Not pages: the API (tests/test_api_*), the health and metrics endpoints, the worker.
NOT_PAGES = {"service-worker", "healthz", "readyz", "metrics"}


def _production_env(static_root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="production-pages-" + "k" * 40,
        STUDY_STATIC_ROOT=str(static_root),
    )
    return env


@pytest.fixture(scope="module")
def static_root(tmp_path_factory) -> Path:
    """collectstatic as the image runs it: DEBUG off, so the production storage."""
    root = tmp_path_factory.mktemp("static")
    done = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT,
        env=_production_env(root),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (root / "staticfiles.json").exists()
    return root


def _settings_under(env: dict[str, str]) -> dict[str, object]:
    with mock.patch.dict(os.environ, env, clear=True):
        namespace = runpy.run_path(str(SETTINGS))
    return {name: value for name, value in namespace.items() if name.isupper()}


@pytest.fixture
def production(settings, static_root):
    """Every setting that differs when the settings module runs with DJANGO_DEBUG=0."""
    current = {
        k: v for k, v in os.environ.items() if k not in {"DJANGO_DEBUG", "DJANGO_SECRET_KEY"}
    }
    development = _settings_under(current)
    production = _settings_under(_production_env(static_root))
    changed = {
        name: value
        for name, value in production.items()
        if name != "SECRET_KEY" and development.get(name, object()) != value
    }
    assert changed["DEBUG"] is False and changed["STATIC_ROOT"] == static_root
    assert "ManifestStaticFilesStorage" in changed["STORAGES"]["staticfiles"]["BACKEND"]
    for name, value in changed.items():
        setattr(settings, name, value)
    return changed


def _web_routes(resolvers=None, prefix: str = "") -> dict[str, str]:
    """Every named route of the URL configuration outside the API and the admin: name ->
    its route."""
    routes: dict[str, str] = {}
    for entry in resolvers if resolvers is not None else get_resolver().url_patterns:
        route = prefix + str(entry.pattern)
        if route.startswith(("api/v1/", "admin/")):
            continue
        if isinstance(entry, URLResolver):
            routes.update(_web_routes(entry.url_patterns, route))
        elif isinstance(entry, URLPattern) and entry.name and entry.name not in NOT_PAGES:
            routes[entry.name] = route
    return routes


@pytest.fixture
def objects(learner, staff):
    deck = Deck.objects.create(slug="production-deck", title="Production deck")
    card = Card.objects.create(
        deck=deck, key="one", kind=Card.Kind.RECALL, prompt="Q?", answer="A.", position=1
    )
    exercise = exercise_create(owner=learner, kind="attention", params=None, seed=7)
    lab = next(iter(LABS))
    submission = Submission.objects.create(learner=learner, lab=lab, code="x = 1", seed=3)
    return {
        "password_reset_confirm": {
            "uidb64": urlsafe_base64_encode(force_bytes(learner.pk)),
            "token": default_token_generator.make_token(learner),
        },
        "email-confirm": {"token": "not-a-token"},
        "dashboard-enroll": {"slug": deck.slug},
        "dashboard-unenroll": {"slug": deck.slug},
        "dashboard-learn-more": {"slug": deck.slug},
        "deck-lesson": {"slug": deck.slug},
        "exercise-page-submit": {"pk": exercise.pk},
        "exercise-page": {"pk": exercise.pk},
        "card-notes": {"pk": card.pk},
        "card-suspend-page": {"pk": card.pk},
        "card-bury-page": {"pk": card.pk},
        "lab-page": {"slug": lab},
        "lab-submission": {"slug": lab, "pk": submission.pk},
        "lab-submission-result": {"slug": lab, "pk": submission.pk},
    }


def _client(user=None) -> Client:
    # HTTPS, as the TLS proxy in front says it is (SECURE_SSL_REDIRECT is on).
    client = Client(raise_request_exception=False, headers={"x-forwarded-proto": "https"})
    if user is not None:
        client.force_login(user)
    return client


def _open(client: Client, url: str, answers: dict[str, int], linked: set[str]) -> None:
    response = client.get(url, secure=True)
    answers[url] = response.status_code
    if response.status_code == 200 and response["Content-Type"].startswith("text/html"):
        html = response.content.decode()
        linked.update(re.findall(r'(?:href|src)="(/static/[^"]+)"', html))


def _error_records(caplog) -> list[str]:
    return [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.ERROR]


def test_every_page_signed_out_as_a_learner_and_as_staff(
    production, objects, learner, staff, caplog
):
    caplog.set_level(logging.WARNING)
    routes = _web_routes()
    with_kwargs = {name for name, route in routes.items() if "<" in route or "(?P" in route}
    assert with_kwargs == set(objects), "give the new page's URL its objects here"
    urls = [reverse(name, kwargs=objects.get(name, {})) for name in sorted(routes)]
    answers: dict[str, dict[str, int]] = {}
    linked: set[str] = set()
    for who, user in (("signed out", None), ("learner", learner), ("staff", staff)):
        client = _client(user)
        answers[who] = {}
        for url in urls + (["/admin/"] if who == "staff" else []):
            _open(client, url, answers[who], linked)
    failed = {who: {u: s for u, s in seen.items() if s >= 500} for who, seen in answers.items()}
    assert failed == {"signed out": {}, "learner": {}, "staff": {}}
    # The pages were shown, not only redirected: the learner's and the admin's.
    assert answers["learner"]["/review/"] == answers["learner"]["/labs/"] == 200
    assert answers["staff"]["/admin/"] == 200
    assert answers["signed out"]["/review/"] == 302
    # Every file a page links is in the manifest and served.
    assert linked and all(re.search(r"\.[0-9a-f]{12}\.", name) for name in linked), linked
    client = _client()
    missing = {name: client.get(name).status_code for name in sorted(linked)}
    assert {name: status for name, status in missing.items() if status != 200} == {}
    assert _error_records(caplog) == []


def test_the_service_worker_its_files_and_the_manifest(production, learner, caplog):
    caplog.set_level(logging.WARNING)
    client = _client(learner)
    response = client.get("/sw.js", secure=True)
    assert response.status_code == 200
    body = response.content.decode()
    kept = set(re.findall(r'"(/static/[^"]+)"', body))
    assert kept and all(re.search(r"\.[0-9a-f]{12}\.", name) for name in kept), kept
    manifest = json.loads((production["STATIC_ROOT"] / "staticfiles.json").read_text())
    webmanifest = "/static/" + manifest["paths"]["manifest.webmanifest"]
    for name in sorted(kept | {webmanifest}):
        assert client.get(name).status_code == 200, name
    app = json.loads(b"".join(client.get(webmanifest).streaming_content))
    assert app["start_url"] and app["icons"]
    assert _error_records(caplog) == []
