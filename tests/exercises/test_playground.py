import numpy as np
import pytest
from django.test import Client

from exercises.models import Prediction
from exercises.presets import PRESETS

URL = "/api/v1/attention/"
X = np.eye(3).tolist()
W_Q = [[1, 0], [0, 1], [1, 1]]
W_K = [[1, 0], [1, 1], [0, 1]]
W_V = [[2, 0], [0, 2], [1, 1]]
LESSON = {"X": X, "W_Q": W_Q, "W_K": W_K, "W_V": W_V}
QKV = {"Q": W_Q, "K": W_K, "V": W_V}

pytestmark = pytest.mark.django_db


def post(api, body):
    return api.post(URL, body, format="json")


def test_lesson_numbers_from_x_and_projections(api):
    r = post(api, LESSON)
    assert r.status_code == 200
    body = r.json()
    np.testing.assert_allclose(
        body["weights"],
        [[0.401, 0.401, 0.198], [0.198, 0.401, 0.401], [0.248, 0.503, 0.248]],
        atol=5e-4,
    )
    np.testing.assert_allclose(body["output"], [[1, 1], [0.797, 1.203], [0.745, 1.255]], atol=5e-4)
    np.testing.assert_allclose(body["scores"][0], [0.707, 0.707, 0], atol=5e-4)
    assert body["Q"] == W_Q
    assert body["shapes"] == {
        "X": [3, 3],
        "W_Q": [3, 2],
        "W_K": [3, 2],
        "W_V": [3, 2],
        "Q": [3, 2],
        "K": [3, 2],
        "V": [3, 2],
        "scores": [3, 3],
        "weights": [3, 3],
        "output": [3, 2],
        "mask": [3, 3],
    }


def test_causal_mask_matches_the_lesson_and_scores_stay_unmasked(api):
    body = post(api, {**QKV, "mask": "causal"}).json()
    np.testing.assert_allclose(
        body["weights"], [[1, 0, 0], [0.330, 0.670, 0], [0.248, 0.503, 0.248]], atol=5e-4
    )
    np.testing.assert_allclose(body["scores"][0], [0.707, 0.707, 0], atol=5e-4)
    assert body["mask"] == np.triu(np.ones((3, 3), bool), 1).tolist()


def test_boolean_mask_and_no_scale(api):
    mask = [[False, False, True]] * 3
    body = post(api, {**QKV, "mask": mask, "scale": False}).json()
    assert body["scores"][2] == [1, 2, 1]
    assert [row[2] for row in body["weights"]] == [0, 0, 0]
    np.testing.assert_allclose(np.sum(body["weights"], axis=1), 1)


def test_article_bank_session_row(api):
    body = post(
        api,
        {
            "Q": [[1, 1, 0, 1]],
            "K": [[1, 0, 0, 0], [1, 1, 0, 1], [0, 1, 1, 0]],
            "V": [[1, 0], [0, 1], [1, 1]],
        },
    ).json()
    np.testing.assert_allclose(body["weights"], [[0.212, 0.576, 0.212]], atol=5e-4)
    np.testing.assert_allclose(body["output"], [[0.424, 0.788]], atol=5e-4)


@pytest.mark.parametrize(
    "body, field, words",
    [
        ({**QKV, "K": [[1, 0, 0]] * 3}, "K", "columns"),
        ({**QKV, "V": [[1, 0]] * 2}, "V", "rows"),
        ({**LESSON, "W_K": [[1, 0]] * 2}, "W_K", "rows"),
        ({**LESSON, "W_K": [[1, 0, 0]] * 3}, "W_K", "columns"),
        ({**QKV, "mask": [[True, True, True], [False] * 3, [False] * 3]}, "mask", "blocked"),
        ({**QKV, "mask": [[False] * 2] * 3}, "mask", "3×3"),
        ({**QKV, "mask": "diagonal"}, "mask", "causal"),
        ({**QKV, "mask": [[0, 1, 0]] * 3}, "mask", "true"),
        ({**QKV, "Q": [[True, 0]] * 3}, "Q", "boolean"),
        ({**QKV, "Q": [["1", 0]] * 3}, "Q", "str"),
        ({**QKV, "Q": []}, "Q", "non-empty"),
        ({**QKV, "Q": [[]]}, "Q", "non-empty"),
        ({**QKV, "Q": [[1, 0], [1]]}, "Q", "ragged"),
        ({**QKV, "Q": [1, 0]}, "Q", "Row 0"),
        ({**QKV, "Q": [[1e300, 0]] * 3}, "Q", "finite"),
        ({**QKV, "Q": [[0] * 257] * 3}, "Q", "256 columns"),
        ({**QKV, "Q": [[0, 0]] * 257}, "Q", "256 rows"),
        ({**QKV, "scale": "yes"}, "scale", "true or false"),
        ({**QKV, **LESSON}, "X", "not both"),
        ({"mask": "none"}, "non_field_errors", "either"),
        ({"Q": W_Q, "K": W_K}, "V", "Required"),
        ({"X": X, "W_Q": W_Q}, "W_K", "Required"),
    ],
)
def test_bad_playground_input_is_400_naming_the_field(api, body, field, words):
    r = post(api, body)
    assert r.status_code == 400, r.json()
    errors = r.json()
    assert field in errors, errors
    assert words in " ".join(errors[field])


def test_nan_literal_is_400(api):
    r = api.generic(
        "POST", URL, '{"Q": [[NaN]], "K": [[1]], "V": [[1]]}', content_type="application/json"
    )
    assert r.status_code == 400


def test_only_json_is_accepted(api):
    r = api.post(URL, {"Q": "1"}, format="multipart")
    assert r.status_code == 415


def test_large_but_allowed_input(api):
    rng = np.random.default_rng(0)
    q = rng.normal(size=(256, 4)).round(3).tolist()
    body = post(api, {"Q": q, "K": q, "V": q, "mask": "causal"}).json()
    assert body["shapes"]["weights"] == [256, 256]


# --- Predict first in the playground -------------------------------------------------------

PREDICTIONS = "/api/v1/attention/predictions/"


@pytest.mark.parametrize(
    ("preset", "right", "wrong"),
    [
        ("bag", "a tie between keys", "bag"),  # row 1 of the lesson: (0.401, 0.401, 0.198)
        ("abc", "C", "a tie between keys"),
        ("large", "almost none (under 5%)", "some (5% to 50%)"),
        ("identical", "uniform", "not uniform"),
        ("causal", "only itself", "every token equally"),
    ],
)
def test_a_preset_prediction_is_marked_against_its_weights(api, learner, preset, right, wrong):
    r = api.post(PREDICTIONS, {"preset": preset, "answer": right}, format="json")
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["correct"] is True and body["expected"] == right
    assert body["preset"] == preset and right in body["choices"]
    assert body["weights"] and all(abs(sum(row) - 1) < 1e-9 for row in body["weights"])
    r = api.post(PREDICTIONS, {"preset": preset, "answer": wrong}, format="json")
    assert r.status_code == 201
    assert r.json()["correct"] is False and r.json()["expected"] == right
    assert f"the numbers say {right!r}" in r.json()["message"]
    stored = Prediction.objects.filter(owner=learner).order_by("id")
    assert [(p.ask, p.answer, p.correct, p.exercise_id) for p in stored] == [
        (f"playground:{preset}", right, True, None),
        (f"playground:{preset}", wrong, False, None),
    ]


def test_the_questions_are_listed_for_every_preset(api):
    r = api.get(PREDICTIONS)
    assert r.status_code == 200
    assert [q["preset"] for q in r.json()] == list(PRESETS)
    assert all(q["question"] and len(q["choices"]) >= 2 for q in r.json())


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"preset": "nope", "answer": "bag"}, "preset", "Expected one of bag, abc"),
        ({"preset": "bag", "answer": "refunds"}, "answer", "'a tie between keys'"),
        ({"preset": "bag", "answer": 3}, "answer", "Expected one of"),
        ({"preset": "bag"}, "answer", "required"),
        ({"preset": "bag", "answer": "bag", "row": 1}, "row", "Unknown field"),
    ],
)
def test_bad_prediction_bodies_are_400_naming_the_field(api, body, field, words):
    r = api.post(PREDICTIONS, body, format="json")
    assert r.status_code == 400
    assert words in " ".join(r.json()[field])
    assert not Prediction.objects.exists()


def test_predictions_need_a_learner(anon_api):
    assert (
        anon_api.post(PREDICTIONS, {"preset": "bag", "answer": "bag"}, format="json").status_code
        == 401
    )


def test_the_playground_page_offers_the_presets_prediction(learner):
    client = Client()
    client.force_login(learner)
    html = client.get("/playground/?preset=causal").content.decode()
    assert 'id="pg-predict"' in html and 'data-preset="causal"' in html
    assert "what does the first token (bag) attend to?" in html
    assert 'value="only itself"' in html
    # Edited matrices are no preset: nothing to predict.
    html = client.get("/playground/?mode=qkv&Q-0-0=1").content.decode()
    assert 'id="pg-predict"' not in html
