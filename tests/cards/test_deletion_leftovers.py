"""Account deletion leaves no session and no log-in record of the learner behind."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from cards.services import privacy

pytestmark = pytest.mark.django_db
PASSWORD = "s3cret-pass!"


def _sessions_of(user) -> int:
    return sum(
        1 for row in Session.objects.all() if row.get_decoded().get("_auth_user_id") == str(user.pk)
    )


def _browser(user) -> Client:
    client = Client()
    assert client.login(username=user.get_username(), password=PASSWORD)
    return client


def _log_ins(*spellings: str) -> None:
    now = timezone.now()
    for name in spellings:
        AccessAttempt.objects.create(
            username=name, ip_address="10.0.0.1", user_agent="test", failures_since_start=2
        )
        AccessLog.objects.create(username=name, ip_address="10.0.0.1", user_agent="test")
        AccessFailureLog.objects.create(
            username=name, ip_address="10.0.0.1", user_agent="test", attempt_time=now
        )


def _log_in_rows(name: str) -> int:
    return sum(
        model.objects.filter(username=name).count()
        for model in (AccessAttempt, AccessLog, AccessFailureLog)
    )


@pytest.fixture
def leftovers(learner, other_learner):
    """Two browsers of alice's and one of bob's; failed log-ins under three spellings."""
    browsers = [_browser(learner), _browser(learner), _browser(other_learner)]
    _log_ins("alice", "ALICE", "Alice", "bob")
    assert _sessions_of(learner) == 2 and _sessions_of(other_learner) == 1
    assert all(_log_in_rows(name) >= 3 for name in ("alice", "ALICE", "Alice"))
    return browsers, _log_in_rows("bob")


def _assert_only_bob_is_left(learner, other_learner, bob_rows):
    assert _sessions_of(learner) == 0
    assert _sessions_of(other_learner) == 1
    for name in ("alice", "ALICE", "Alice"):
        assert _log_in_rows(name) == 0, name
    assert _log_in_rows("bob") == bob_rows


def test_delete_me_removes_the_sessions_and_every_spelling_of_the_log_ins(
    api, learner, other_learner, leftovers
):
    browsers, bob_rows = leftovers
    response = api.delete("/api/v1/me/", {"password": PASSWORD}, format="json")
    assert response.status_code == 204
    _assert_only_bob_is_left(learner, other_learner, bob_rows)
    assert browsers[0].get("/profile/").status_code == 302
    assert browsers[2].get("/profile/").status_code == 200


def test_the_profile_page_deletion_removes_the_other_browsers_sessions_too(
    learner, other_learner, leftovers
):
    browsers, bob_rows = leftovers
    response = browsers[0].post("/profile/delete/", {"delete-password": PASSWORD})
    assert response.status_code == 302
    _assert_only_bob_is_left(learner, other_learner, bob_rows)
    assert browsers[1].get("/profile/").status_code == 302


def test_log_ins_of_another_account_spelled_alike_stay(learner, django_user_model):
    # An account made in the admin before names were compared without case.
    twin = django_user_model.objects.create_user("Alice", password=PASSWORD)
    _log_ins("alice", "Alice")
    privacy.account_delete(user=learner)
    assert _log_in_rows("alice") == 0
    assert _log_in_rows("Alice") == 3
    assert django_user_model.objects.filter(pk=twin.pk).exists()
