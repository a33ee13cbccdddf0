"""The service worker's script at /sw.js: where it is served from, its headers, and the
version that names its cache."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from studyapp import views
from studyapp.cache_control import learner_key


def _constant(body: str, name: str) -> str:
    match = re.search(rf"^const {name} = (.+);$", body, re.MULTILINE)
    assert match, f"{name} is not in the worker"
    return match.group(1)


@pytest.fixture
def worker(db):
    def get():
        response = Client().get("/sw.js")
        assert response.status_code == 200
        return response, response.content.decode()

    return get


def test_the_worker_is_served_from_the_root_as_a_script_checked_on_every_visit(worker):
    response, body = worker()
    assert response["Content-Type"] == "text/javascript; charset=utf-8"
    assert response["Cache-Control"] == "no-cache"
    assert response["Service-Worker-Allowed"] == "/"
    assert "worker-src 'self'" in response["Content-Security-Policy"]
    static_files = json.loads(_constant(body, "STATIC_FILES"))
    assert "/static/css/site.css" in static_files
    assert {"/static/js/offline.js", "/static/js/review.js", "/static/js/controls.js"} <= set(
        static_files
    )
    assert json.loads(_constant(body, "PAGES")) == ["/review/", "/"]
    never = json.loads(_constant(body, "NEVER"))
    assert "/api/" in never
    assert json.loads(_constant(body, "LEARNER_HEADER")) == "X-Study-Learner"
    assert json.loads(_constant(body, "LEARNER_COOKIE")) == "study_learner"
    # Nothing in it came out HTML-escaped.
    assert "&quot;" not in body and "&#x27;" not in body


def test_the_version_follows_the_kept_files(worker, monkeypatch):
    _, body = worker()
    version = json.loads(_constant(body, "VERSION"))
    assert re.fullmatch(r"[0-9a-f]{16}", version)
    assert json.loads(_constant(worker()[1], "VERSION")) == version

    original = views._static_bytes
    monkeypatch.setattr(
        views,
        "_static_bytes",
        lambda name: original(name) + (b"/* changed */" if name == "js/review.js" else b""),
    )
    changed = views._offline_version()
    assert changed != version
    monkeypatch.setattr(views, "_cached_offline_version", views._offline_version)
    assert json.loads(_constant(worker()[1], "VERSION")) == changed


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_only_get_is_answered(db, method):
    response = getattr(Client(), method)("/sw.js")
    assert response.status_code == 405
    assert response["Allow"] == "GET"


def test_a_page_kept_by_the_worker_leaves_the_messages_for_the_next_page(learner, deck):
    client = Client()
    client.force_login(learner)
    client.post(f"/decks/{deck.slug}/enroll/")
    kept = client.get("/", headers={"X-Study-Precache": "1"})
    assert kept.status_code == 200
    assert "Enrolled in" not in kept.content.decode()
    shown = client.get("/")
    assert "Enrolled in" in shown.content.decode()
    assert "Enrolled in" not in client.get("/").content.decode()


def test_pages_name_their_learner_by_an_opaque_key_and_load_the_queue_first(learner, client):
    client.force_login(learner)
    body = client.get("/").content.decode()
    key = learner_key(learner)
    assert f'<html lang="en" data-theme="auto" data-learner="{key}">' in body
    assert str(learner.pk) != key
    assert 'action="/logout/" data-logout' in body
    head = body.split("</head>")[0]
    assert '<script src="/static/js/offline.js"></script>' in head
    assert 'id="nav-due"' in body
    client.logout()
    assert "data-learner" not in client.get("/login/").content.decode()
