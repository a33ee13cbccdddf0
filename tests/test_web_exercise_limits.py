"""The exercise pages and the exercise API share one budget per learner.

Creating an exercise (web POST /exercises/, API POST exercises/) counts against
``exercise_create``; answering one (web POST /exercises/<id>/submit/, API POST
exercises/{id}/submit/) against ``exercise_submit``. A page over the limit answers the
429 page the other forms answer, with Retry-After, and does nothing.
"""

from __future__ import annotations

import pytest
from django.test import Client

from exercises.models import Attempt, Exercise
from exercises.services import exercise_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def page(learner) -> Client:
    client = Client()
    client.force_login(learner)
    return client


def assert_throttled_page(response) -> None:
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    html = response.content.decode()
    assert "Too many attempts" in html and "Try again in" in html


def web_create(page):
    return page.post("/exercises/", {"kind": "attention"})


def api_create(api):
    return api.post("/api/v1/exercises/", {"kind": "attention"}, format="json")


def test_web_and_api_exercise_creation_share_one_limit(limits, page, api, other_api, learner):
    limits(exercise_create="3/minute")
    assert web_create(page).status_code == 302
    assert api_create(api).status_code == 201
    assert web_create(page).status_code == 302
    before = Exercise.objects.filter(owner=learner).count()
    assert_throttled_page(web_create(page))
    assert api_create(api).status_code == 429
    assert Exercise.objects.filter(owner=learner).count() == before == 3
    # Reading the pages is not creating, and another learner has a budget of their own.
    assert page.get("/exercises/").status_code == 200
    assert api_create(other_api).status_code == 201


def test_api_requests_use_up_the_pages_budget_too(limits, page, api):
    limits(exercise_create="2/minute")
    assert [api_create(api).status_code for _ in range(2)] == [201, 201]
    assert_throttled_page(web_create(page))


def test_web_and_api_submissions_share_one_limit(limits, page, api, learner):
    limits(exercise_submit="3/minute")
    exercise = exercise_create(owner=learner, kind="attention", params={"seed": 3})
    wrong_cells = {"answer-scores-0-0": "not a number"}  # refused, but a submission
    url = f"/exercises/{exercise.pk}/submit/"
    api_url = f"/api/v1/exercises/{exercise.pk}/submit/"
    assert page.post(url, wrong_cells).status_code == 400
    assert api.post(api_url, {"answers": {}}, format="json").status_code == 400
    assert page.post(url, wrong_cells).status_code == 400
    assert_throttled_page(page.post(url, wrong_cells))
    assert api.post(api_url, {"answers": {}}, format="json").status_code == 429
    # From the review page (same address, ?from=review) too.
    assert_throttled_page(page.post(url + "?from=review", wrong_cells))
    assert not Attempt.objects.filter(exercise=exercise).exists()
    assert page.get(f"/exercises/{exercise.pk}/").status_code == 200


def test_the_web_limit_is_per_learner(limits, page, make_user):
    limits(exercise_create="1/minute")
    assert web_create(page).status_code == 302
    assert web_create(page).status_code == 429
    other = Client()
    other.force_login(make_user("dora"))
    assert web_create(other).status_code == 302
