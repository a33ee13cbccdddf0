"""``create_demo_users``: two working logins, the demo learner enrolled, safe to repeat."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from cards.models import Card, Enrollment, ReviewState

pytestmark = pytest.mark.django_db
User = get_user_model()


def _run() -> str:
    out = io.StringIO()
    call_command("create_demo_users", stdout=out)
    return out.getvalue()


@pytest.fixture
def starter():
    call_command("load_starter_content", stdout=io.StringIO())


@pytest.fixture(autouse=True)
def _no_password_env(monkeypatch):
    monkeypatch.delenv("DEMO_PASSWORD", raising=False)
    monkeypatch.delenv("ADMIN_PASSWORD", raising=False)


def test_creates_a_learner_and_a_superuser_with_the_documented_passwords(starter, settings):
    settings.DEBUG = True
    output = _run()
    demo, admin = User.objects.get(username="demo"), User.objects.get(username="admin")
    assert demo.check_password("demo-pass-123") and not demo.is_staff and not demo.is_superuser
    assert admin.check_password("admin-pass-123") and admin.is_staff and admin.is_superuser
    for user in (demo, admin):
        assert Token.objects.get(user=user).key in output
    assert "demo-pass-123" in output and "admin-pass-123" in output


def test_printed_token_authenticates_against_the_api(starter, settings):
    settings.DEBUG = True
    output = _run()
    token = re.search(r"^demo\s+password \S+\s+token (\w+)", output, re.M).group(1)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = client.get("/api/v1/decks/attention-and-transformers/")
    assert response.status_code == 200
    assert response.json()["enrolled"] is True


def test_demo_learner_is_enrolled_in_the_starter_deck(starter, settings):
    settings.DEBUG = True
    output = _run()
    demo = User.objects.get(username="demo")
    assert Enrollment.objects.filter(learner=demo, deck__slug="attention-and-transformers").exists()
    active = Card.objects.filter(deck__slug="attention-and-transformers", is_active=True).count()
    # The pace's first batch is placed; the rest wait their turn.
    pace = demo.profile.new_cards_per_day
    assert ReviewState.objects.filter(learner=demo).count() == pace < active
    assert f"{pace} card(s) newly scheduled" in output
    assert f"{active - pace} waiting for the pace" in output
    admin = User.objects.get(username="admin")
    assert not Enrollment.objects.filter(learner=admin).exists()


def test_running_twice_changes_nothing(starter, settings):
    settings.DEBUG = True
    _run()
    users = {u.username: (u.pk, u.password) for u in User.objects.all()}
    tokens = set(Token.objects.values_list("key", flat=True))
    states = set(ReviewState.objects.values_list("pk", "step", "due_on"))

    output = _run()
    assert {u.username: (u.pk, u.password) for u in User.objects.all()} == users
    assert set(Token.objects.values_list("key", flat=True)) == tokens
    assert set(ReviewState.objects.values_list("pk", "step", "due_on")) == states
    assert output.count("unchanged") == 2 and "0 card(s) newly scheduled" in output


def test_environment_passwords_win_and_drifted_accounts_are_repaired(
    starter, settings, monkeypatch
):
    settings.DEBUG = True
    _run()
    User.objects.filter(username="admin").update(is_staff=False, is_superuser=False)
    monkeypatch.setenv("DEMO_PASSWORD", "a-long-demo-secret")
    monkeypatch.setenv("ADMIN_PASSWORD", "a-long-admin-secret")
    output = _run()
    demo, admin = User.objects.get(username="demo"), User.objects.get(username="admin")
    assert demo.check_password("a-long-demo-secret")
    assert admin.check_password("a-long-admin-secret") and admin.is_staff and admin.is_superuser
    assert output.count("updated") == 2


def test_refuses_development_passwords_when_debug_is_off(starter, settings, monkeypatch):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="DEMO_PASSWORD"):
        _run()
    monkeypatch.setenv("DEMO_PASSWORD", "a-long-demo-secret")
    with pytest.raises(CommandError, match="ADMIN_PASSWORD"):
        _run()
    assert not User.objects.filter(username__in=["demo", "admin"]).exists()

    monkeypatch.setenv("ADMIN_PASSWORD", "a-long-admin-secret")
    _run()
    assert User.objects.get(username="admin").check_password("a-long-admin-secret")


def test_without_the_starter_deck_it_says_what_to_run(settings):
    settings.DEBUG = True
    output = _run()
    assert "run manage.py load_starter_content first" in output
    assert User.objects.filter(username="demo").exists()
    assert not Enrollment.objects.exists()


def test_demo_learner_can_review_on_day_one(starter, settings):
    settings.DEBUG = True
    output = _run()
    token = re.search(r"^demo\s+password \S+\s+token (\w+)", output, re.M).group(1)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    due = client.get("/api/v1/reviews/due/").json()
    assert due["count"] == 10
    assert "10 due today" in output
    recall = next(item for item in due["results"] if item["card"]["kind"] != "exercise")
    response = client.post(
        "/api/v1/reviews/", {"card": recall["card"]["id"], "result": "pass"}, format="json"
    )
    assert response.status_code == 201, response.json()
    # Running the command again leaves the review and the rest of the schedule alone.
    states = set(ReviewState.objects.values_list("pk", "step", "due_on"))
    _run()
    assert set(ReviewState.objects.values_list("pk", "step", "due_on")) == states


def test_due_today_can_be_set_or_switched_off(starter, settings):
    settings.DEBUG = True
    call_command("create_demo_users", "--due-today", "0", stdout=io.StringIO())
    demo = User.objects.get(username="demo")
    assert ReviewState.objects.filter(learner=demo).values("due_on").distinct().count() == 1
