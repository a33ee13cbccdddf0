"""Asking for a fresh confirmation link, over the API and from the profile page: it
needs an address, refuses one already confirmed, and is limited like the other
requests that mail a link."""

from __future__ import annotations

import re
import uuid

import pytest
from django.core import mail
from rest_framework.test import APIClient

from cards.models import LearnerProfile

pytestmark = pytest.mark.django_db
URL = "/api/v1/me/email-confirmation/"


def _link(message) -> str:
    return re.search(r"https?://[^/\s]+(/profile/email/confirm/\S+/)", message.body).group(1)


@pytest.fixture
def with_address(learner):
    learner.email = "alice@example.org"
    learner.save()
    mail.outbox.clear()
    return learner


@pytest.fixture
def limited(settings):
    """The mail-link scope at 2 an hour, counted in a cache of this test's own."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"resend-{uuid.uuid4()}",
        }
    }
    settings.STUDY_THROTTLE_RATES = {**settings.STUDY_THROTTLE_RATES, "password_reset": "2/hour"}


def test_a_fresh_link_is_mailed_and_confirms_the_address(api, with_address, client):
    response = api.post(URL)

    assert response.status_code == 202, response.content
    assert response.json() == {"detail": "A confirmation link is on its way to alice@example.org."}
    [message] = mail.outbox
    assert message.to == ["alice@example.org"]
    assert client.get(_link(message)).status_code == 200
    assert api.get("/api/v1/me/").json()["email_confirmed"] is True


def test_an_account_without_an_address_gets_a_400_naming_email(api, learner):
    mail.outbox.clear()

    response = api.post(URL)

    assert response.status_code == 400
    assert "email" in response.json()
    assert mail.outbox == []


def test_a_confirmed_address_gets_a_409_and_no_mail(api, with_address):
    LearnerProfile.objects.filter(user=with_address).update(confirmed_email="alice@example.org")

    response = api.post(URL)

    assert response.status_code == 409
    assert "confirmed already" in response.json()["detail"]
    assert mail.outbox == []


def test_anonymous_clients_get_401_and_other_methods_405(api, with_address):
    assert APIClient().post(URL).status_code == 401
    assert api.get(URL).status_code == 405
    assert mail.outbox == []


def test_the_api_is_limited_like_the_password_reset(api, with_address, limited):
    assert [api.post(URL).status_code for _ in range(2)] == [202, 202]

    refused = api.post(URL)

    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 3000  # an hour's window
    assert len(mail.outbox) == 2


def test_the_profile_button_is_limited_too(client, with_address, limited):
    client.force_login(with_address)
    assert [client.post("/profile/email/send/").status_code for _ in range(2)] == [302, 302]

    refused = client.post("/profile/email/send/")

    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 3000
    assert len(mail.outbox) == 2


def test_the_profile_button_says_when_the_address_is_confirmed_already(client, with_address):
    LearnerProfile.objects.filter(user=with_address).update(confirmed_email="alice@example.org")
    client.force_login(with_address)

    page = client.post("/profile/email/send/", follow=True).content.decode()

    assert "alice@example.org is confirmed already." in page
    assert mail.outbox == []
