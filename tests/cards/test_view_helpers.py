"""What the learner pages share: a form's problems on one line, the signed-in user."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.test import Client, RequestFactory

from cards.forms import ReviewForm
from cards.views.common import form_problems, signed_in


@pytest.mark.django_db
def test_form_problems_name_each_field_and_its_messages():
    form = ReviewForm({"result": "maybe"})
    assert not form.is_valid()
    line = form_problems(form)
    assert line.startswith("card: This field is required.; result: ")
    assert "maybe" in line


def test_signed_in_refuses_an_anonymous_request():
    request = RequestFactory().get("/")
    request.user = AnonymousUser()
    with pytest.raises(PermissionDenied):
        signed_in(request)


@pytest.mark.django_db
def test_signed_in_is_the_session_user(learner):
    request = RequestFactory().get("/")
    request.user = learner
    assert signed_in(request) == learner


@pytest.mark.django_db
def test_a_bad_review_post_names_its_fields_in_the_400(learner):
    client = Client()
    client.force_login(learner)
    response = client.post("/review/", {"card": "x", "result": "maybe"})
    assert response.status_code == 400
    text = response.content.decode()
    assert text.startswith("Expected a card id, a result of 'pass' or 'fail' and an optional ")
    assert "(card: " in text
    assert "; result: " in text
