"""The account lifecycle: tokens, passwords, e-mail confirmation, export and deletion."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from cards.models import Enrollment, LearnerProfile, Reminder, ReviewLog, ReviewState
from cards.services import reminders
from cards.services.privacy import DELETED_LEARNERS_USERNAME
from exercises.models import Attempt, Exercise

pytestmark = pytest.mark.django_db
PASSWORD = "s3cret-pass!"
User = get_user_model()


def token_client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def login_token(username: str, password: str = PASSWORD) -> str:
    response = APIClient().post(
        "/api/v1/auth/token/", {"username": username, "password": password}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()["token"]


# --- Tokens -----------------------------------------------------------------------


def test_logout_deletes_the_token_and_the_next_login_gets_a_new_one(learner):
    first = login_token("alice")
    client = token_client(first)
    assert client.post("/api/v1/auth/logout/").status_code == 204
    assert client.get("/api/v1/me/").status_code == 401
    second = login_token("alice")
    assert second != first
    assert token_client(second).get("/api/v1/me/").status_code == 200


def test_logout_needs_credentials(anon_api):
    assert anon_api.post("/api/v1/auth/logout/").status_code == 401


def test_change_password_answers_a_new_token_and_the_old_one_stops(learner):
    old = login_token("alice")
    client = token_client(old)
    response = client.post(
        "/api/v1/me/password/",
        {"old_password": PASSWORD, "new_password": "a-brand-new-passphrase"},
        format="json",
    )
    assert response.status_code == 200, response.content
    new = response.json()["token"]
    assert new != old and len(new) == 40
    assert client.get("/api/v1/me/").status_code == 401
    assert token_client(new).get("/api/v1/me/").status_code == 200
    login_token("alice", "a-brand-new-passphrase")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"old_password": "wrong", "new_password": "a-brand-new-passphrase"}, "old_password"),
        ({"old_password": PASSWORD, "new_password": "123"}, "new_password"),
        ({"old_password": PASSWORD}, "new_password"),
        ({"old_password": PASSWORD, "new_password": 12345678901}, "new_password"),
    ],
)
def test_change_password_rejects_bad_input_and_changes_nothing(api, learner, body, field):
    response = api.post("/api/v1/me/password/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    learner.refresh_from_db()
    assert learner.check_password(PASSWORD)
    assert api.get("/api/v1/me/").status_code == 200


def test_web_password_change_replaces_the_api_token_and_keeps_the_session(learner):
    old = login_token("alice")
    client = Client()
    client.force_login(learner)
    response = client.post(
        "/password/change/",
        {
            "old_password": PASSWORD,
            "new_password1": "a-brand-new-passphrase",
            "new_password2": "a-brand-new-passphrase",
        },
    )
    assert response.status_code == 302
    assert token_client(old).get("/api/v1/me/").status_code == 401
    assert client.get("/profile/").status_code == 200  # still logged in
    bad = client.post(
        "/password/change/",
        {"old_password": "nope", "new_password1": "x", "new_password2": "x"},
    )
    assert bad.status_code == 400


# --- Password reset -----------------------------------------------------------------


def _reset_link(message) -> tuple[str, str, str]:
    link = re.search(r"https?://\S+/password/reset/(\S+)/(\S+)/", message.body)
    uid, token = re.search(r"uid: (\S+)\s+token: (\S+)", message.body).groups()
    return link.group(0), uid, token


@pytest.fixture
def mail_worker(django_capture_on_commit_callbacks):
    """Runs the mail tasks a request enqueues, as a worker does after the answer."""
    from studyapp.celery import app

    app.conf.task_always_eager = True
    yield lambda: django_capture_on_commit_callbacks(execute=True)
    app.conf.task_always_eager = False


def test_password_reset_by_api_is_202_for_any_address_and_mails_only_known_ones(
    anon_api, learner, mail_worker
):
    learner.email = "alice@example.org"
    learner.save()
    old = login_token("alice")  # a log-in after the mail would void its link, as Django does
    mail.outbox.clear()
    with mail_worker():
        unknown = anon_api.post(
            "/api/v1/auth/password-reset/", {"email": "nobody@example.org"}, format="json"
        )
    with mail_worker():
        known = anon_api.post(
            "/api/v1/auth/password-reset/", {"email": "alice@example.org"}, format="json"
        )
    assert unknown.status_code == known.status_code == 202
    assert unknown.content == known.content
    assert [m.to for m in mail.outbox] == [["alice@example.org"]]

    _link, uid, token = _reset_link(mail.outbox[0])
    confirm = anon_api.post(
        "/api/v1/auth/password-reset/confirm/",
        {"uid": uid, "token": token, "new_password": "reset-long-passphrase"},
        format="json",
    )
    assert confirm.status_code == 204, confirm.content
    assert token_client(old).get("/api/v1/me/").status_code == 401
    login_token("alice", "reset-long-passphrase")
    # One-time: the same link does not work twice.
    again = anon_api.post(
        "/api/v1/auth/password-reset/confirm/",
        {"uid": uid, "token": token, "new_password": "third-long-passphrase"},
        format="json",
    )
    assert again.status_code == 400 and "token" in again.json()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"email": "not-an-address"}, "email"),
        ({}, "email"),
        ({"uid": "MQ", "token": "bogus", "new_password": "reset-long-passphrase"}, "token"),
        ({"uid": "!!", "token": "bogus", "new_password": "reset-long-passphrase"}, "token"),
    ],
)
def test_password_reset_rejects_bad_input(anon_api, learner, body, field):
    path = "/api/v1/auth/password-reset/" + ("confirm/" if "uid" in body else "")
    response = anon_api.post(path, body, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_password_reset_on_the_web(client, learner, mail_worker):
    learner.email = "alice@example.org"
    learner.save()
    mail.outbox.clear()
    assert client.get("/login/").content.decode().count("/password/reset/") == 1
    with mail_worker():
        response = client.post("/password/reset/", {"email": "alice@example.org"})
    assert response.status_code == 302
    link, _uid, _token = _reset_link(mail.outbox[0])
    page = client.get(link, follow=True)
    assert page.status_code == 200 and page.context["validlink"]
    done = client.post(
        page.redirect_chain[-1][0],
        {"new_password1": "web-reset-passphrase", "new_password2": "web-reset-passphrase"},
    )
    assert done.status_code == 302
    login_token("alice", "web-reset-passphrase")


# --- E-mail confirmation ------------------------------------------------------------


def _confirm_link(message) -> str:
    return re.search(r"https?://[^/\s]+(/profile/email/confirm/\S+/)", message.body).group(1)


def test_changing_the_email_needs_the_password_and_a_confirmation(
    api, learner, client, django_capture_on_commit_callbacks
):
    no_password = api.patch("/api/v1/me/", {"email": "new@example.org"}, format="json")
    assert no_password.status_code == 400 and "password" in no_password.json()
    wrong = api.patch(
        "/api/v1/me/", {"email": "new@example.org", "password": "wrong"}, format="json"
    )
    assert wrong.status_code == 400
    learner.refresh_from_db()
    assert learner.email == ""

    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        ok = api.patch(
            "/api/v1/me/", {"email": "new@example.org", "password": PASSWORD}, format="json"
        )
    assert ok.status_code == 200, ok.content
    assert ok.json()["email"] == "new@example.org"
    assert ok.json()["email_confirmed"] is False
    assert "password" not in ok.json()
    assert [m.to for m in mail.outbox] == [["new@example.org"]]

    page = client.get(_confirm_link(mail.outbox[0]))
    assert page.status_code == 200 and "is confirmed" in page.content.decode()
    assert api.get("/api/v1/me/").json()["email_confirmed"] is True
    # Other fields need no password.
    assert api.patch("/api/v1/me/", {"reminder_hour": 7}, format="json").status_code == 200


def test_a_link_for_an_old_address_or_a_forged_one_confirms_nothing(
    api, learner, client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        api.patch("/api/v1/me/", {"email": "one@example.org", "password": PASSWORD}, format="json")
    first_link = _confirm_link(mail.outbox[-1])
    api.patch("/api/v1/me/", {"email": "two@example.org", "password": PASSWORD}, format="json")
    assert client.get(first_link).status_code == 400
    assert client.get("/profile/email/confirm/forged:token/").status_code == 400
    assert LearnerProfile.objects.get(user=learner).confirmed_email == ""


def test_registration_with_an_email_sends_the_confirmation(
    anon_api, django_capture_on_commit_callbacks
):
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        anon_api.post(
            "/api/v1/auth/register/",
            {"username": "gina", "password": "a-long-passphrase", "email": "g@example.org"},
            format="json",
        )
    assert [m.to for m in mail.outbox] == [["g@example.org"]]
    assert "/profile/email/confirm/" in mail.outbox[0].body


def _due_learner(user, deck):
    LearnerProfile.objects.filter(user=user).update(
        timezone="UTC", day_starts_at=0, reminder_hour=0, reminders=True
    )
    Enrollment.objects.create(learner=user, deck=deck)
    ReviewState.objects.create(
        learner=user, card=deck.cards.first(), step=0, due_on=dt.date(2026, 1, 1)
    )


def test_reminders_go_only_to_a_confirmed_address(learner, deck, client):
    learner.email = "alice@example.org"
    learner.save()
    _due_learner(learner, deck)
    at = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)
    mail.outbox.clear()
    reminders.reminder_pass_here(at=at)
    assert mail.outbox == [] and not Reminder.objects.exists()

    # The profile says so instead of staying silent.
    client.force_login(learner)
    page = client.get("/profile/").content.decode()
    assert "Reminders are on but no confirmed address" in page

    LearnerProfile.objects.filter(user=learner).update(confirmed_email="alice@example.org")
    reminders.reminder_pass_here(at=at)
    assert [m.to for m in mail.outbox] == [["alice@example.org"]]
    assert (
        "Reminders are on but no confirmed address" not in client.get("/profile/").content.decode()
    )


def test_resend_confirmation_from_the_profile(learner, client):
    learner.email = "alice@example.org"
    learner.save()
    client.force_login(learner)
    mail.outbox.clear()
    assert client.post("/profile/email/send/").status_code == 302
    assert [m.to for m in mail.outbox] == [["alice@example.org"]]


def test_web_profile_email_change_needs_the_password(learner, client):
    client.force_login(learner)
    form = {"email": "x@example.org", "timezone": "UTC", "day_starts_at": "4", "reminder_hour": "9"}
    response = client.post("/profile/", form)
    assert response.status_code == 400
    assert "password" in response.context["form"].errors
    learner.refresh_from_db()
    assert learner.email == ""


# --- Export -------------------------------------------------------------------------


@pytest.fixture
def history(learner, deck):
    """A learner with an enrolment, a state, a review, an exercise and an attempt."""
    card = deck.cards.first()
    Enrollment.objects.create(learner=learner, deck=deck)
    ReviewState.objects.create(learner=learner, card=card, step=1, due_on=dt.date(2026, 3, 5))
    ReviewLog.objects.create(
        learner=learner,
        card=card,
        reviewed_at=dt.datetime(2026, 3, 2, 12, tzinfo=dt.UTC),
        study_day=dt.date(2026, 3, 2),
        result="pass",
        step_before=0,
        step_after=1,
        interval_days=3,
        due_before=dt.date(2026, 3, 2),
        due_after=dt.date(2026, 3, 5),
        idempotency_key="k-1",
    )
    exercise = Exercise.objects.create(
        owner=learner, kind="attention", params={}, seed=1, inputs={}, asks=[], solution={}
    )
    Attempt.objects.create(
        exercise=exercise, number=1, answers={"x": 1}, correct=False, score=0.5, result={}
    )
    return card, exercise


def test_export_holds_everything_about_the_learner_and_nothing_of_others(
    api, other_api, learner, other_learner, deck, history
):
    card, exercise = history
    other_api.post(f"/api/v1/decks/{deck.slug}/enroll/")
    response = api.get("/api/v1/me/export/")
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    data = response.json()
    assert {"profile", "enrollments", "states", "reviews", "exercises", "reports"} <= set(data)
    assert data["profile"]["username"] == "alice"
    assert data["enrollments"] == [
        {"deck": deck.slug, "enrolled_at": data["enrollments"][0]["enrolled_at"]}
    ]
    assert [(s["card_id"], s["step"]) for s in data["states"]] == [(card.pk, 1)]
    assert [(r["card_id"], r["result"]) for r in data["reviews"]] == [(card.pk, "pass")]
    assert [e["id"] for e in data["exercises"]] == [exercise.pk]
    assert data["exercises"][0]["attempts"][0]["answers"] == {"x": 1}
    assert data["reports"] == []
    assert "bob" not in json.dumps(data)


def test_export_from_the_profile_page(learner, history):
    client = Client()
    client.force_login(learner)
    assert "/profile/export/" in client.get("/profile/").content.decode()
    response = client.get("/profile/export/")
    assert response.status_code == 200
    assert json.loads(response.content)["profile"]["username"] == "alice"


def test_export_needs_a_login(anon_api, client):
    assert anon_api.get("/api/v1/me/export/").status_code == 401
    assert client.get("/profile/export/").status_code == 302


# --- Delete -------------------------------------------------------------------------


def test_delete_needs_the_password(api, learner):
    for body in ({}, {"password": "wrong"}, {"password": 5}):
        response = api.delete("/api/v1/me/", body, format="json")
        assert response.status_code == 400 and "password" in response.json()
    assert User.objects.filter(pk=learner.pk).exists()


def test_delete_removes_personal_data_and_unlinks_the_review_log(api, learner, history, deck):
    card, exercise = history
    response = api.delete("/api/v1/me/", {"password": PASSWORD}, format="json")
    assert response.status_code == 204
    assert api.get("/api/v1/me/").status_code == 401
    assert not User.objects.filter(username="alice").exists()
    assert not Exercise.objects.filter(pk=exercise.pk).exists()
    assert not Attempt.objects.exists()
    assert not ReviewState.objects.filter(card=card).exists()
    assert not Token.objects.filter(user_id=learner.pk).exists()
    # The log stays for card statistics, held by the deleted-learners account, keyless.
    kept = ReviewLog.objects.get(card=card)
    assert kept.learner.username == DELETED_LEARNERS_USERNAME
    assert not kept.learner.is_active and not kept.learner.has_usable_password()
    assert kept.idempotency_key == ""
    # The username is free again.
    again = APIClient().post(
        "/api/v1/auth/register/",
        {"username": "alice", "password": "a-long-passphrase"},
        format="json",
    )
    assert again.status_code == 201
    assert (
        APIClient()
        .post(
            "/api/v1/auth/token/",
            {"username": DELETED_LEARNERS_USERNAME, "password": ""},
            format="json",
        )
        .status_code
        == 400
    )


def test_delete_from_the_profile_page(learner, history):
    client = Client()
    client.force_login(learner)
    wrong = client.post("/profile/delete/", {"delete-password": "wrong"})
    assert wrong.status_code == 400
    assert User.objects.filter(pk=learner.pk).exists()
    response = client.post("/profile/delete/", {"delete-password": PASSWORD})
    assert response.status_code == 302
    assert not User.objects.filter(pk=learner.pk).exists()
    assert client.get("/profile/").status_code == 302  # logged out


def test_a_superuser_deletes_a_learner_in_the_admin(learner, history, django_user_model):
    root = django_user_model.objects.create_superuser("root", "root@example.org", "root-pass-123")
    client = Client()
    client.force_login(root)
    url = f"/admin/auth/user/{learner.pk}/delete/"
    page = client.get(url)
    assert page.status_code == 200
    response = client.post(url, {"post": "yes"})
    assert response.status_code == 302, response.content[:500]
    assert not User.objects.filter(pk=learner.pk).exists()
    assert ReviewLog.objects.get().learner.username == DELETED_LEARNERS_USERNAME


def test_staff_who_are_not_superusers_cannot_delete_learners(learner, history, django_user_model):
    staff = django_user_model.objects.create_user("staffer", password="x", is_staff=True)
    from django.contrib.auth.models import Permission

    staff.user_permissions.add(Permission.objects.get(codename="delete_user"))
    client = Client()
    client.force_login(staff)
    response = client.post(f"/admin/auth/user/{learner.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
    assert User.objects.filter(pk=learner.pk).exists()
