"""Account mail: links from SITE_URL, the reset mail sent by a worker, single-use links."""

from __future__ import annotations

import re
import time

import pytest
from django.core import mail
from django.core.mail.backends.locmem import EmailBackend
from django.test import Client
from rest_framework.test import APIClient

from cards.models import LearnerProfile

pytestmark = pytest.mark.django_db
SITE = "https://study.example.org"
SLOW_SECONDS = 1.5


class SlowEmailBackend(EmailBackend):
    """An SMTP server that takes its time: every message costs SLOW_SECONDS."""

    def send_messages(self, messages):
        time.sleep(SLOW_SECONDS * len(messages))
        return super().send_messages(messages)


@pytest.fixture
def mail_worker(django_capture_on_commit_callbacks):
    """Runs the mail tasks a request enqueues, as a worker does after the answer."""
    from studyapp.celery import app

    app.conf.task_always_eager = True
    yield lambda: django_capture_on_commit_callbacks(execute=True)
    app.conf.task_always_eager = False


@pytest.fixture
def alice(make_user, settings):
    settings.SITE_URL = SITE
    user = make_user("alice")
    user.email = "alice@example.org"
    user.save()
    return user


def _links(message) -> list[str]:
    return re.findall(r"https?://\S+", message.body)


# --- Links from SITE_URL --------------------------------------------------------------


def test_the_api_reset_link_comes_from_site_url_not_the_host(alice, mail_worker):
    mail.outbox.clear()
    with mail_worker():
        response = APIClient().post(
            "/api/v1/auth/password-reset/",
            {"email": "alice@example.org"},
            format="json",
            HTTP_HOST="localhost:31337",
        )
    assert response.status_code == 202
    [message] = mail.outbox
    [link] = _links(message)
    assert link.startswith(f"{SITE}/password/reset/"), link
    assert "31337" not in message.body and "localhost" not in message.body


def test_the_web_reset_link_comes_from_site_url_not_the_host_or_referer(alice, mail_worker):
    mail.outbox.clear()
    with mail_worker():
        response = Client().post(
            "/password/reset/",
            {"email": "alice@example.org"},
            HTTP_HOST="localhost:31337",
            HTTP_REFERER="http://localhost:31337/password/reset/",
        )
    assert response.status_code == 302
    [message] = mail.outbox
    [link] = _links(message)
    assert link.startswith(f"{SITE}/password/reset/"), link
    assert "31337" not in message.body
    # And the link works.
    page = Client().get(link.removeprefix(SITE), follow=True)
    assert page.status_code == 200 and page.context["validlink"]


# --- The reset mail is sent by a worker, after the answer -----------------------------


@pytest.mark.parametrize("path", ["/api/v1/auth/password-reset/", "/password/reset/"])
def test_the_request_only_enqueues_and_known_and_unknown_take_one_path(
    alice, settings, django_capture_on_commit_callbacks, path
):
    settings.EMAIL_BACKEND = f"{__name__}.SlowEmailBackend"
    api = path.startswith("/api/")
    client = APIClient() if api else Client()
    mail.outbox.clear()
    answers, times, enqueued = {}, {}, {}
    for email in ("alice@example.org", "nobody@example.org"):
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            start = time.perf_counter()
            if api:
                response = client.post(path, {"email": email}, format="json")
            else:
                response = client.post(path, {"email": email})
            times[email] = time.perf_counter() - start
        answers[email] = (response.status_code, response.content)
        enqueued[email] = len(callbacks)
    # Same answer, same work (one task enqueued on commit), nothing sent inline.
    assert answers["alice@example.org"] == answers["nobody@example.org"]
    assert enqueued == {"alice@example.org": 1, "nobody@example.org": 1}
    assert mail.outbox == []
    # Neither waited for the slow mail server (a generous bound: it takes 1.5 s a message).
    assert max(times.values()) < SLOW_SECONDS * 2 / 3, times


def test_the_worker_mails_only_known_addresses(alice, mail_worker):
    from cards.tasks import send_password_reset_mail

    mail.outbox.clear()
    assert send_password_reset_mail("nobody@example.org") == 0
    assert send_password_reset_mail("ALICE@example.org") == 1
    assert [m.to for m in mail.outbox] == [["alice@example.org"]]


def test_a_broker_that_is_down_still_answers_202(
    alice, monkeypatch, django_capture_on_commit_callbacks, caplog
):
    from cards import tasks

    def down(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.send_password_reset_mail, "apply_async", down)
    with django_capture_on_commit_callbacks(execute=True):
        response = APIClient().post(
            "/api/v1/auth/password-reset/", {"email": "alice@example.org"}, format="json"
        )
    assert response.status_code == 202
    assert "Could not enqueue a password reset mail" in caplog.text
    assert "alice@example.org" not in caplog.text


# --- Confirmation links work once -----------------------------------------------------


def _confirm_path(message) -> str:
    return re.search(r"https?://[^/\s]+(/profile/email/confirm/\S+/)", message.body).group(1)


def _request_link(user, django_capture_on_commit_callbacks) -> str:
    client = APIClient()
    client.force_authenticate(user)
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/v1/me/email-confirmation/", HTTP_HOST="localhost:31337")
        assert response.status_code == 202
    [link] = _links(mail.outbox[-1])
    assert link.startswith(f"{SITE}/profile/email/confirm/"), link  # SITE_URL, not the Host
    return _confirm_path(mail.outbox[-1])


def test_a_confirmation_link_works_once(alice, django_capture_on_commit_callbacks):
    path = _request_link(alice, django_capture_on_commit_callbacks)
    first = Client().get(path)
    assert first.status_code == 200
    assert LearnerProfile.objects.get(user=alice).confirmed_email == "alice@example.org"
    second = Client().get(path)
    assert second.status_code == 400
    assert "already used" in second.content.decode()


def test_an_old_link_does_not_confirm_an_address_again(alice, django_capture_on_commit_callbacks):
    # A link for the first address; the learner moves to another address and confirms it,
    # then moves back: the old link, sent before that confirmation, confirms nothing.
    old_link = _request_link(alice, django_capture_on_commit_callbacks)
    client = APIClient()
    client.force_authenticate(alice)
    for address in ("other@example.org", "alice@example.org"):
        mail.outbox.clear()
        with django_capture_on_commit_callbacks(execute=True):
            body = {"email": address, "password": "s3cret-pass!"}
            assert client.patch("/api/v1/me/", body, format="json").status_code == 200
        if address == "other@example.org":
            assert Client().get(_confirm_path(mail.outbox[-1])).status_code == 200
    response = Client().get(old_link)
    assert response.status_code == 400
    assert "already used" in response.content.decode()
    assert LearnerProfile.objects.get(user=alice).confirmed_email == "other@example.org"
    assert client.get("/api/v1/me/").json()["email_confirmed"] is False
