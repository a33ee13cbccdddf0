"""The exercise page marks each cell right, wrong or follows (not by colour alone), shows
the diagnosis once at the first wrong step, closes once solved, shows counts in full and
never shows a review-bound exercise's seed; the API keeps that seed private too."""

import re
from pathlib import Path

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from exercises import reviews
from exercises.checking import MISTAKES
from exercises.kinds import get_kind
from exercises.models import Attempt, Exercise
from exercises.services import exercise_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def page(learner) -> Client:
    client = Client()
    client.force_login(learner)
    return client


def fields_for(exercise: Exercise, answers: dict) -> dict[str, str]:
    out = {}
    for ask in exercise.asks:
        value = np.asarray(answers[ask["name"]], dtype=object)
        for index in np.ndindex(value.shape):
            name = "-".join(["answer", ask["name"], *(str(i) for i in index)])
            cell = value[index]
            out[name] = str(cell) if ask.get("exact") else f"{float(cell):.3f}"
    return out


def submit(page, exercise, answers):
    return page.post(f"/exercises/{exercise.pk}/submit/", fields_for(exercise, answers))


def test_cells_are_marked_right_wrong_and_follows_with_words_not_only_colour(page, learner):
    exercise = exercise_create(owner=learner, kind="attention", params={"seed": 5})
    kind = get_kind("attention")
    unscaled = kind.answers_under(exercise.inputs, MISTAKES["no_scale"].recipe, 3)
    assert submit(page, exercise, unscaled).status_code == 302
    html = page.get(f"/exercises/{exercise.pk}/").content.decode()
    assert 'role="img" aria-label="wrong"' in html
    assert 'role="img" aria-label="follows from your scores"' in html
    assert 'role="img" aria-label="follows from your weights"' in html
    assert "↪ Follows from your scores" in html
    # Each input is described by its cell's mark, so the verdict is read with the cell.
    assert 'aria-describedby="mark-answer-weights-0-0"' in html
    assert 'id="mark-answer-weights-0-0"' in html
    # The diagnosis once, inside the first wrong step's part.
    text = MISTAKES["no_scale"].text
    assert html.count(text) == 1
    scores_part = html[html.index('id="part-scores"') : html.index('id="part-weights"')]
    assert text in scores_part
    assert "First wrong step" in html


def test_a_right_cell_gets_a_right_mark(page, learner):
    exercise = exercise_create(owner=learner, kind="causal", params={"seed": 2})
    answers = {"weights": np.asarray(exercise.solution["weights"])}
    answers["weights"][-1, 0] += 0.5
    submit(page, exercise, answers)
    html = page.get(f"/exercises/{exercise.pk}/").content.decode()
    n = len(exercise.solution["weights"])
    assert html.count('role="img" aria-label="right"') == n * n - 1
    assert html.count('role="img" aria-label="wrong"') == 1


def test_a_solved_exercise_closes_its_form_and_refuses_more_answers(page, learner):
    exercise = exercise_create(owner=learner, kind="attention", params={"seed": 1})
    submit(page, exercise, exercise.solution)
    exercise.refresh_from_db()
    assert exercise.solved and exercise.attempts_used == 1
    html = page.get(f"/exercises/{exercise.pk}/").content.decode()
    assert "takes no more answers" in html
    assert "Check answers" not in html
    inputs = re.findall(r"<input [^>]*name=\"answer-[^>]*>", html)
    assert inputs and all(" disabled" in tag for tag in inputs)
    wrong = {k: np.asarray(v) + 1 for k, v in exercise.solution.items()}
    r = submit(page, exercise, wrong)
    assert r.status_code == 302
    exercise.refresh_from_db()
    assert exercise.attempts_used == 1 and Attempt.objects.filter(exercise=exercise).count() == 1
    follow = page.get(r["Location"]).content.decode()
    assert "already solved" in follow


def test_cost_counts_are_shown_in_full(page, learner):
    exercise = exercise_create(
        owner=learner,
        kind="cost",
        params={"n": 1_048_576, "d_model": 65_536, "heads": 256, "layers": 512, "vary": False},
    )
    answers = dict(exercise.solution)
    answers["quadratic_share"] = 0.5  # one wrong part keeps the exercise open
    submit(page, exercise, answers)
    attempt = Attempt.objects.get(exercise=exercise)
    assert attempt.answers["score_bytes"] == exercise.solution["score_bytes"]  # exact, an int
    assert attempt.result["parts"]["score_bytes"]["correct"] is True
    html = page.get(f"/exercises/{exercise.pk}/").content.decode()
    assert f'value="{exercise.solution["score_bytes"]}"' in html
    assert 'class="wide"' in html  # the input is as wide as the count
    assert "e+" not in html.split('id="answer-form"')[1].split("</form>")[0]


def test_a_review_bound_exercise_keeps_its_seed_private(api, learner, page):
    bound = exercise_create(owner=learner, kind="attention", params={}, bound=True)
    assert "seed" not in bound.params
    body = api.get(f"/api/v1/exercises/{bound.pk}/").json()
    assert "seed" not in body["params"]
    assert str(bound.seed) not in str(body)
    listed = api.get("/api/v1/exercises/").json()["results"]
    assert all("seed" not in item["params"] for item in listed if item["id"] == bound.pk)
    html = page.get(f"/exercises/{bound.pk}/").content.decode()
    assert str(bound.seed) not in html
    # The seed, even when known, does not make the same exercise again.
    practice = api.post(
        "/api/v1/exercises/",
        {"kind": "attention", "params": {"seed": bound.seed}},
        format="json",
    ).json()
    assert practice["params"]["seed"] == bound.seed
    assert practice["inputs"] != bound.inputs


def test_a_practice_exercise_keeps_its_seed_so_it_can_be_made_again(api):
    a = api.post("/api/v1/exercises/", {"kind": "causal", "params": {}}, format="json").json()
    b = api.post(
        "/api/v1/exercises/",
        {"kind": "causal", "params": {"seed": a["params"]["seed"]}},
        format="json",
    ).json()
    assert a["inputs"] == b["inputs"]


def test_parameters_that_cannot_tell_right_from_wrong_are_400(api):
    r = api.post(
        "/api/v1/exercises/",
        {
            "kind": "cost",
            "params": {"n": 1_048_576, "d_model": 1, "heads": 2, "layers": 1, "vary": False},
        },
        format="json",
    )
    assert r.status_code == 400
    assert "tells a right answer from a wrong one" in r.json()["params"][0]
    assert not Exercise.objects.exists()


def test_the_schema_documents_follows_and_the_first_wrong_step(api):
    schema = api.get("/api/schema/?format=json").json()
    parts = schema["components"]["schemas"]["PartResult"]["properties"]
    assert "follows" in parts and "follows_from" in parts
    assert "first_wrong" in schema["components"]["schemas"]["SubmitResult"]["properties"]


@pytest.fixture
def stand_in():
    """A review side other than the study core's, registered for one test; the dict maps
    an exercise id to the card it is bound to."""
    previous = reviews.review_side()
    bound: dict[int, int] = {}
    reviews.register(
        reviews.ReviewSide(
            submit_url=lambda exercise_id: f"/elsewhere/{exercise_id}/answers/",
            review_page_url=lambda: "/elsewhere/queue/",
            bound_card_id=bound.get,
        )
    )
    yield bound
    reviews.register(previous)


def test_the_exercise_page_links_to_the_study_pages_of_the_review_side(page, learner):
    exercise = exercise_create(owner=learner, kind="attention", params={"seed": 5})
    html = page.get(f"/exercises/{exercise.pk}/?from=review").content.decode()
    assert f'action="/exercises/{exercise.pk}/submit/?from=review"' in html
    assert 'class="button" href="/review/">Continue reviewing' in html
    assert 'id="report-form"' not in html  # practice: no card to report on


def test_the_review_side_registered_is_the_one_the_exercise_page_follows(page, learner, stand_in):
    # The routes and the binding are the review side's: exercises names none of cards'.
    exercise = exercise_create(owner=learner, kind="attention", params={"seed": 5})
    html = page.get(f"/exercises/{exercise.pk}/?from=review").content.decode()
    assert f'action="/elsewhere/{exercise.pk}/answers/?from=review"' in html
    assert 'class="button" href="/elsewhere/queue/">Continue reviewing' in html
    assert 'id="report-form"' not in html
    stand_in[exercise.pk] = 4242
    html = page.get(f"/exercises/{exercise.pk}/").content.decode()
    assert f'action="/elsewhere/{exercise.pk}/answers/"' in html
    assert 'id="report-form"' in html
    assert 'name="card" value="4242"' in html
    assert f'name="exercise" value="{exercise.pk}"' in html


def test_without_a_review_side_the_error_says_what_registers_one(monkeypatch):
    monkeypatch.setattr(reviews, "_side", None)
    with pytest.raises(ImproperlyConfigured, match=r"INSTALLED_APPS.*exercises\.reviews\.register"):
        reviews.review_side()


def test_exercise_code_and_templates_name_only_their_own_routes():
    from exercises import urls, web_urls

    own = {p.name for p in [*urls.urlpatterns, *web_urls.urlpatterns] if p.name}
    root = Path(__file__).resolve().parents[2]
    sources = [*(root / "exercises").rglob("*.py"), *(root / "templates/exercises").glob("*.html")]
    named = set()
    for source in sources:
        text = source.read_text()
        named |= set(re.findall(r"""\{% url ['"]([\w:-]+)['"]""", text))
        named |= set(re.findall(r"""(?:reverse|redirect)\(\s*['"]([\w:-]+)['"]""", text))
    assert named  # the scan finds the routes it checks
    assert named - own == set()
