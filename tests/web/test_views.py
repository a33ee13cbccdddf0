"""The learner pages through Django's test client: access, validation, CSRF, ownership."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from django.test import Client
from django.utils import timezone

from cards import selectors
from cards.models import Enrollment, LearnerProfile, ReviewLog, ReviewState
from exercises import services as exercise_services
from exercises.cells import cell_indices, cell_name
from exercises.models import Exercise

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_for():
    def make(user, *, csrf: bool = False) -> Client:
        client = Client(enforce_csrf_checks=csrf)
        client.force_login(user)
        return client

    return make


def _today(user) -> dt.date:
    return selectors.learner_today(learner=user, at=timezone.now())


def _make_due(user, deck) -> None:
    ReviewState.objects.filter(learner=user, card__deck=deck).update(due_on=_today(user))


def _enrol(client, deck) -> None:
    assert client.post(f"/decks/{deck.slug}/enroll/").status_code == 302


# --- Access -----------------------------------------------------------------------


def test_anonymous_visitor_sees_the_landing_page():
    response = Client().get("/")
    assert response.status_code == 200
    assert b'href="/signup/"' in response.content
    assert b'href="/login/"' in response.content


@pytest.mark.parametrize(
    "path", ["/review/", "/profile/", "/exercises/", "/exercises/1/", "/playground/"]
)
def test_learner_pages_redirect_anonymous_visitors_to_login(path):
    response = Client().get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


def test_logout_is_a_post(client_for, learner):
    client = client_for(learner)
    assert client.get("/logout/").status_code == 405
    assert client.post("/logout/").status_code == 302
    assert client.get("/review/").status_code == 302


# --- Sign up and profile --------------------------------------------------------------


def test_signup_creates_a_learner_with_the_chosen_time_zone_and_logs_in():
    client = Client()
    response = client.post(
        "/signup/",
        {
            "username": "carol",
            "password1": "long-enough-pass-42",
            "password2": "long-enough-pass-42",
            "email": "",
            "timezone": "Europe/Berlin",
        },
    )
    assert response.status_code == 302
    assert LearnerProfile.objects.get(user__username="carol").timezone == "Europe/Berlin"
    assert client.get("/").context["user"].username == "carol"


def test_signup_with_a_weak_password_shows_the_error_and_creates_nobody(django_user_model):
    response = Client().post(
        "/signup/",
        {"username": "dave", "password1": "123", "password2": "123", "timezone": "UTC"},
    )
    assert response.status_code == 400
    assert response.context["form"].errors
    assert b'aria-invalid="true"' in response.content
    assert not django_user_model.objects.filter(username="dave").exists()


def test_profile_saves_valid_settings(client_for, learner):
    response = client_for(learner).post(
        "/profile/",
        {
            "email": "a@example.org",
            "password": "s3cret-pass!",
            "timezone": "Asia/Tokyo",
            "day_starts_at": "5",
            "reminder_hour": "20",
        },
    )
    assert response.status_code == 302
    profile = LearnerProfile.objects.get(user=learner)
    assert (profile.timezone, profile.day_starts_at, profile.reminders, profile.reminder_hour) == (
        "Asia/Tokyo",
        5,
        False,
        20,
    )


def test_bad_profile_input_shows_errors_next_to_fields_and_changes_nothing(client_for, learner):
    before = LearnerProfile.objects.filter(user=learner).values().get()
    response = client_for(learner).post(
        "/profile/",
        {
            "email": "not-an-email",
            "timezone": "Mars/Olympus",
            "day_starts_at": "25",
            "reminders": "on",
            "reminder_hour": "x",
        },
    )
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert set(errors) == {"email", "timezone", "day_starts_at", "reminder_hour"}
    html = response.content.decode()
    assert 'id="id_timezone_error"' in html and 'aria-describedby="id_timezone_error"' in html
    assert LearnerProfile.objects.filter(user=learner).values().get() == before
    learner.refresh_from_db()
    assert learner.email == ""


# --- Decks and CSRF -------------------------------------------------------------------


def test_enrol_and_leave_a_deck(client_for, learner, deck):
    client = client_for(learner)
    _enrol(client, deck)
    assert Enrollment.objects.filter(learner=learner, deck=deck).exists()
    assert ReviewState.objects.filter(learner=learner).count() == 2
    page = client.get("/")
    assert b"Leave Attention basics" in page.content
    assert client.post(f"/decks/{deck.slug}/unenroll/").status_code == 302
    assert not Enrollment.objects.filter(learner=learner, deck=deck).exists()
    assert ReviewState.objects.filter(learner=learner).count() == 2  # progress is kept


def test_enrol_without_a_csrf_token_is_refused(client_for, learner, deck):
    client = client_for(learner, csrf=True)
    assert client.post(f"/decks/{deck.slug}/enroll/").status_code == 403
    assert not Enrollment.objects.filter(learner=learner).exists()


def test_enrol_is_post_only_and_unknown_decks_are_404(client_for, learner, deck):
    client = client_for(learner)
    assert client.get(f"/decks/{deck.slug}/enroll/").status_code == 405
    assert client.post("/decks/no-such-deck/enroll/").status_code == 404


def test_review_post_without_csrf_token_is_refused(client_for, learner, deck):
    client = client_for(learner)
    _enrol(client, deck)
    _make_due(learner, deck)
    recall = deck.cards.get(key="why-scale")
    strict = client_for(learner, csrf=True)
    assert strict.post("/review/", {"card": recall.pk, "result": "pass"}).status_code == 403
    assert not ReviewLog.objects.exists()


def test_dashboard_draws_the_forecast_and_history_with_text_alternatives(client_for, learner, deck):
    client = client_for(learner)
    _enrol(client, deck)
    html = client.get("/").content.decode()
    assert '<svg id="forecast-chart" role="img"' in html
    assert "2 cards due over the next 30 days" in html
    assert '<svg id="history-chart" role="img"' in html
    assert "Forecast as a table" in html


# --- Review -----------------------------------------------------------------------


def test_review_shows_a_due_recall_card_and_records_the_grade(client_for, learner, deck):
    client = client_for(learner)
    _enrol(client, deck)
    recall = deck.cards.get(key="why-scale")
    ReviewState.objects.filter(learner=learner, card=recall).update(due_on=_today(learner))
    page = client.get("/review/")
    html = page.content.decode()
    assert "Card 1 of 1" in html
    assert "<math" in html  # the prompt's $\sqrt{d_k}$ is MathML
    response = client.post("/review/", {"card": recall.pk, "result": "pass"})
    assert response.status_code == 302
    log = ReviewLog.objects.get(learner=learner)
    assert (log.result, log.step_after) == ("pass", 1)
    # A second press of the same button is told, not recorded twice.
    again = client.post("/review/", {"card": recall.pk, "result": "pass"}, follow=True)
    assert "already reviewed" in again.content.decode()
    assert ReviewLog.objects.filter(learner=learner).count() == 1


def test_review_with_nothing_due_names_the_next_due_date(client_for, learner, deck):
    client = client_for(learner)
    _enrol(client, deck)
    html = client.get("/review/").content.decode()
    tomorrow = _today(learner) + dt.timedelta(days=1)
    assert "All done for today" in html
    assert tomorrow.strftime("%B") in html and str(tomorrow.year) in html


def test_review_rejects_a_malformed_grade(client_for, learner, deck):
    client = client_for(learner)
    response = client.post("/review/", {"card": "abc", "result": "maybe"})
    assert response.status_code == 400
    assert b"result" in response.content
    assert not ReviewLog.objects.exists()


def test_review_of_a_card_outside_the_queue_is_a_message(client_for, learner, other_learner, deck):
    client = client_for(other_learner)
    _enrol(client, deck)
    recall = deck.cards.get(key="why-scale")
    response = client_for(learner).post(
        "/review/", {"card": recall.pk, "result": "pass"}, follow=True
    )
    assert "not in your review queue" in response.content.decode()
    assert not ReviewLog.objects.exists()


# --- Exercises --------------------------------------------------------------------


def _answers_fields(exercise: Exercise, solution: dict) -> dict[str, str]:
    fields = {}
    for ask in exercise.asks:
        value = np.asarray(solution[ask["name"]], dtype=float)
        for index in cell_indices(ask["shape"]):
            fields[cell_name(ask["name"], index)] = f"{value[index]:.4f}"
    return fields


def test_another_learners_exercise_is_404(client_for, learner, other_learner):
    theirs = exercise_services.exercise_create(
        owner=other_learner, kind="attention", params={"n": 2}
    )
    client = client_for(learner)
    assert client.get(f"/exercises/{theirs.pk}/").status_code == 404
    fields = _answers_fields(theirs, theirs.solution)
    assert client.post(f"/exercises/{theirs.pk}/submit/", fields).status_code == 404
    theirs.refresh_from_db()
    assert theirs.attempts_used == 0


def test_create_exercise_from_the_form(client_for, learner):
    client = client_for(learner)
    response = client.post(
        "/exercises/",
        {
            "kind": "attention",
            "attention-n": "2",
            "attention-d_k": "2",
            "attention-d_v": "1",
            "attention-mask": "causal",
            "attention-scale": "on",
            "attention-max_abs": "2",
        },
    )
    exercise = Exercise.objects.get(owner=learner)
    assert response.status_code == 302 and response["Location"] == f"/exercises/{exercise.pk}/"
    assert exercise.params["mask"] == "causal" and exercise.params["d_v"] == 1
    page = client.get(f"/exercises/{exercise.pk}/").content.decode()
    assert 'aria-label="weights row 2 column 1"' in page
    assert 'inputmode="text"' in page  # phone keypads for decimals may lack a minus sign


def test_create_exercise_with_a_bad_parameter_names_it_and_creates_nothing(client_for, learner):
    response = client_for(learner).post("/exercises/", {"kind": "attention", "attention-n": "99"})
    assert response.status_code == 400
    assert "Expected a value from" in response.content.decode()
    assert not Exercise.objects.filter(owner=learner).exists()
    response = client_for(learner).post("/exercises/", {"kind": "sorcery"})
    assert response.status_code == 400
    assert not Exercise.objects.filter(owner=learner).exists()


def test_a_cell_that_is_not_a_number_uses_no_attempt(client_for, learner):
    exercise = exercise_services.exercise_create(owner=learner, kind="attention", params={"n": 2})
    fields = _answers_fields(exercise, exercise.solution)
    fields["answer-weights-0-1"] = "abc"
    response = client_for(learner).post(f"/exercises/{exercise.pk}/submit/", fields)
    assert response.status_code == 400
    html = response.content.decode()
    assert "weights row 1 column 2 is &#x27;abc&#x27;" in html
    assert 'aria-invalid="true"' in html
    exercise.refresh_from_db()
    assert exercise.attempts_used == 0


def test_wrong_cells_are_marked_and_right_answers_solve(client_for, learner):
    exercise = exercise_services.exercise_create(owner=learner, kind="attention", params={"n": 2})
    client = client_for(learner)
    fields = _answers_fields(exercise, exercise.solution)
    fields["answer-output-1-0"] = "123"
    assert client.post(f"/exercises/{exercise.pk}/submit/", fields).status_code == 302
    html = client.get(f"/exercises/{exercise.pk}/").content.decode()
    assert "Not quite" in html
    assert 'aria-label="output row 2 column 1" aria-invalid="true"' in html
    assert 'role="img" aria-label="wrong"' in html and 'role="img" aria-label="right"' in html
    assert html.count('aria-invalid="true"') == 1
    right = _answers_fields(exercise, exercise.solution)
    client.post(f"/exercises/{exercise.pk}/submit/", right)
    exercise.refresh_from_db()
    assert exercise.solved and exercise.attempts_used == 2
    html = client.get(f"/exercises/{exercise.pk}/").content.decode()
    assert "Correct!" in html
    assert 'id="weights-heatmap"' in html and "Expected weights" in html


# --- Playground -------------------------------------------------------------------


def test_playground_renders_the_lessons_weights_before_any_script(client_for, learner):
    html = client_for(learner).get("/playground/").content.decode()
    # The lesson's table for bag / delayed / refund, row by row.
    for row in (
        ("0.401", "0.401", "0.198"),
        ("0.198", "0.401", "0.401"),
        ("0.248", "0.503", "0.248"),
    ):
        for value in row:
            assert value in html
    assert 'id="weights-table"' in html


def test_playground_presets_and_causal_mask(client_for, learner):
    client = client_for(learner)
    large = client.get("/playground/?preset=large").context["result"]
    # The lesson: "Eight times larger (8, 8, 0): weights (0.500, 0.500, 0.0002)".
    assert [round(w, 4) for w in large["weights"][0]] == [0.4999, 0.4999, 0.0002]
    identical = client.get("/playground/?preset=identical").context["result"]
    assert all(abs(w - 1 / 3) < 1e-9 for row in identical["weights"] for w in row)
    query = (
        "mode=xw&scale=on&causal=on&tokens=bag,delayed,refund"
        "&X-rows=3&X-cols=3&X-0-0=1&X-1-1=1&X-2-2=1"
        "&W_Q-rows=3&W_Q-cols=2&W_Q-0-0=1&W_Q-1-1=1&W_Q-2-0=1&W_Q-2-1=1"
        "&W_K-rows=3&W_K-cols=2&W_K-0-0=1&W_K-1-0=1&W_K-1-1=1&W_K-2-1=1"
        "&W_V-rows=3&W_V-cols=2&W_V-0-0=2&W_V-1-1=2&W_V-2-0=1&W_V-2-1=1"
    )
    causal = client.get(f"/playground/?{query}").context["result"]["weights"]
    assert [[round(w, 3) for w in row] for row in causal] == [
        [1.0, 0.0, 0.0],
        [0.33, 0.67, 0.0],
        [0.248, 0.503, 0.248],
    ]


def test_playground_reports_bad_cells_and_shapes_inline(client_for, learner):
    client = client_for(learner)
    response = client.get(
        "/playground/?mode=qkv&Q-rows=1&Q-cols=2&Q-0-0=x&K-rows=1&K-cols=2&V-rows=1&V-cols=1"
    )
    assert response.status_code == 400
    assert "Q row 1, column 1: expected a number" in response.content.decode()
    response = client.get(
        "/playground/?mode=qkv&Q-rows=1&Q-cols=2&K-rows=1&K-cols=3&V-rows=1&V-cols=1"
    )
    assert response.status_code == 400
    assert "K: Expected 2 columns" in response.content.decode()
    response = client.get("/playground/?mode=qkv&Q-rows=99")
    assert response.status_code == 400
    assert "Q rows: expected a whole number from 1 to 8" in response.content.decode()
