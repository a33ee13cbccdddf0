"""Predict first: a choice answered before the numbers, stored, and shown beside them."""

import datetime as dt
from collections import Counter

import numpy as np
import pytest
import time_machine
from django.test import Client

from cards.models import Card, Deck, ExerciseBinding, ReviewLog
from cards.services.housekeeping import purge_stale_exercises
from exercises import predictions
from exercises.kinds import get_kind
from exercises.kinds.base import ParamError
from exercises.models import Attempt, Exercise, Prediction
from exercises.variants import draw_variant

EXERCISES = "/api/v1/exercises/"
START = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)


def submit_url(exercise_id):
    return f"{EXERCISES}{exercise_id}/submit/"


def create(api, kind="causal", **params):
    r = api.post(EXERCISES, {"kind": kind, "params": params}, format="json")
    assert r.status_code == 201, r.content
    return r.json()


def numeric_solution(exercise_id):
    ex = Exercise.objects.get(pk=exercise_id)
    return {k: v for k, v in ex.solution.items() if k != predictions.PREDICTION_PART}


# --- What the numbers say (pure) -------------------------------------------------------------


def test_top_key_names_the_largest_weight_or_a_tie():
    labels = predictions.key_labels(3)
    assert labels == ["key 1", "key 2", "key 3"]  # counted as the tables count columns
    assert predictions.top_key([0.2, 0.5, 0.3], labels) == "key 2"
    assert predictions.top_key([0.401, 0.401, 0.198], labels) == predictions.TIE


def test_uniform_counts_only_the_keys_a_query_may_read():
    assert predictions.uniform_or_not([0.5, 0.5, 0.0], [True, True, False]) == predictions.UNIFORM
    assert (
        predictions.uniform_or_not([0.5, 0.3, 0.2], [True, True, True]) == predictions.NOT_UNIFORM
    )


def test_prediction_check_is_right_exactly_on_the_choice_the_numbers_support():
    choices = (predictions.UNIFORM, predictions.NOT_UNIFORM)
    right = predictions.prediction_check(choices, predictions.UNIFORM, predictions.UNIFORM)
    wrong = predictions.prediction_check(choices, predictions.NOT_UNIFORM, predictions.UNIFORM)
    assert right == predictions.PredictionCheck("uniform", "uniform", correct=True)
    assert wrong == predictions.PredictionCheck("not uniform", "uniform", correct=False)


@pytest.mark.parametrize(
    ("answer", "got"), [("flat", "got 'flat'"), (1, "got 1"), (None, "got null")]
)
def test_prediction_check_refuses_an_answer_not_among_the_choices(answer, got):
    with pytest.raises(ValueError) as caught:
        predictions.prediction_check(("uniform", "not uniform"), answer, "uniform")
    assert str(caught.value) == f"Expected one of 'uniform', 'not uniform'; {got}."


def test_token_zero_under_the_causal_mask_reads_only_itself():
    assert predictions.first_token_reads([[1.0, 0.0], [0.4, 0.6]]) == predictions.ONLY_ITSELF
    assert predictions.first_token_reads([[0.5, 0.5], [0.4, 0.6]]) == predictions.EVERY_TOKEN
    assert predictions.first_token_reads([[0.7, 0.3], [0.4, 0.6]]) == predictions.ITSELF_AND_LATER


@pytest.mark.parametrize(
    ("scores", "d_k", "expected"),
    [
        ([1, 2, 3], 16, predictions.SHARPER),
        ([3, -1, 0], 4, predictions.SHARPER),
        ([2, 2, 2], 16, predictions.UNCHANGED),  # equal scores stay uniform
        ([1, 2, 3], 1, predictions.UNCHANGED),  # sqrt(1) = 1
    ],
)
def test_removing_the_scale_sharpens_unless_nothing_changes(scores, d_k, expected):
    assert predictions.scale_effect(scores, d_k) == expected


# --- Kinds ------------------------------------------------------------------------------------


def test_causal_token_0_prediction_comes_first_and_is_only_itself(generate):
    _, g = generate("causal", predict="token_0")
    first = g.asks[0]
    assert first["name"] == "prediction" and first["shape"] == []
    assert first["choices"] == [
        "only itself",
        "every token equally",
        "itself and the tokens after it",
    ]
    assert first["question"].startswith("Concept check:")
    assert "the first token (token 1)" in first["question"]
    assert g.solution["prediction"] == "only itself"
    assert [a["name"] for a in g.asks[1:]] == ["weights"]
    assert g.prompt.startswith("**Predict first:**")


def _row(ask):
    """The row a question names, counted from 1 as the tables count."""
    return int(ask["question"].split("row ")[1].split(" ")[0])


@pytest.mark.parametrize("seed", range(20))
def test_top_key_prediction_matches_the_weights(seed):
    for kind, mask in (("attention", "none"), ("causal", None)):
        params = {"predict": "top_key"} if mask is None else {"predict": "top_key", "mask": mask}
        k = get_kind(kind)
        g = draw_variant(k, k.normalize_params(params), seed)
        ask = g.asks[0]
        row = _row(ask)
        assert f"(query {row})" in ask["question"]
        weights = np.asarray(g.solution["weights"])[row - 1]
        open_keys = ~np.asarray(g.inputs["mask"], dtype=bool)[row - 1]
        if kind == "causal":
            assert row != 1  # the first row only ever reads itself: no question there
        assert ask["choices"] == [f"key {j + 1}" for j in np.flatnonzero(open_keys)]
        top = np.flatnonzero(weights >= weights.max() - 1e-9)
        assert top.size == 1  # a clear top key: the choices hold no tie
        assert np.sort(weights[open_keys])[-2] <= weights.max() - predictions.TOP_MARGIN
        assert g.solution["prediction"] == f"key {top[0] + 1}"


# A few hundred seeds of each fair question: every choice right in at least 15% of the
# variants that offer it.
FAIR = [
    ("attention", {"predict": "uniform"}),
    ("attention", {"predict": "uniform", "mask": "causal"}),
    ("attention", {"predict": "uniform", "mask": "padding", "n": 4}),
    ("attention", {"predict": "uniform", "d_k": 1, "scale": False}),
    ("attention", {"predict": "top_key"}),
    ("attention", {"predict": "top_key", "mask": "causal"}),
    ("causal", {"predict": "top_key"}),
]


@pytest.mark.parametrize(("kind_name", "params"), FAIR)
def test_every_choice_is_right_in_a_fair_share_of_variants(kind_name, params):
    kind = get_kind(kind_name)
    normalized = kind.normalize_params(params)
    right, offered = Counter(), Counter()
    for seed in range(300):
        g = draw_variant(kind, normalized, seed)
        offered.update(g.asks[0]["choices"])
        right[g.solution["prediction"]] += 1
    for choice, times in offered.items():
        assert right[choice] >= 0.15 * times, (choice, right[choice], times)


@pytest.mark.parametrize("mask", ["none", "causal", "padding"])
def test_a_uniform_question_asks_about_a_row_that_reads_two_keys_or_more(mask):
    kind = get_kind("attention")
    normalized = kind.normalize_params({"predict": "uniform", "mask": mask, "n": 4})
    for seed in range(100):
        g = draw_variant(kind, normalized, seed)
        row = _row(g.asks[0])
        open_keys = ~np.asarray(g.inputs["mask"], dtype=bool)[row - 1]
        assert open_keys.sum() >= 2
        w = np.asarray(g.solution["weights"])[row - 1][open_keys]
        uniform = np.ptp(w) <= 1e-9
        assert g.solution["prediction"] == ("uniform" if uniform else "not uniform")


@pytest.mark.parametrize(
    ("kind_name", "params", "right"),
    [
        ("causal", {"predict": "token_0"}, "only itself"),
        ("causal", {"predict": "token_0", "n": 5, "d_k": 3}, "only itself"),
        ("scaling", {"predict": "scale_effect"}, "sharper"),
        ("scaling", {"predict": "scale_effect", "d_k": 64, "n": 5}, "sharper"),
    ],
)
def test_a_concept_check_says_so_and_its_distractors_are_false_on_every_variant(
    kind_name, params, right
):
    kind = get_kind(kind_name)
    normalized = kind.normalize_params(params)
    for seed in range(200):
        g = draw_variant(kind, normalized, seed)
        ask = g.asks[0]
        assert ask["question"].startswith("Concept check:")
        assert g.solution["prediction"] == right
        weights = np.asarray(g.solution.get("weights", [[1.0]]))
        if kind_name == "causal":
            # Each distractor, read off the numbers, is false: the first row is (1, 0, ...).
            assert weights[0, 0] == 1.0 and not weights[0, 1:].any()
        else:
            scores = np.asarray(g.inputs["scores"], dtype=float)
            assert np.ptp(scores) > 0  # unequal scores: "unchanged" is false
            scaled, unscaled = g.solution["weights_scaled"], g.solution["weights_unscaled"]
            assert max(unscaled) > max(scaled)  # "flatter" is false


def test_scaling_prediction_asks_sharper_or_flatter(generate):
    _, g = generate("scaling", predict="scale_effect", d_k=16)
    assert g.asks[0]["choices"] == ["sharper", "flatter", "unchanged"]
    expected = predictions.scale_effect(g.inputs["scores"], 16)
    assert g.solution["prediction"] == expected
    # d_k = 1 (where the scale changes nothing) is not offered: the unscaled row must saturate.
    with pytest.raises(ParamError):
        generate("scaling", predict="scale_effect", d_k=1)
    assert predictions.scale_effect(g.inputs["scores"], 1) == "unchanged"


def test_without_predict_nothing_changes(generate):
    _, plain = generate("causal")
    _, with_prediction = generate("causal", predict="token_0")
    assert not any(a.get("choices") for a in plain.asks)
    assert plain.inputs == with_prediction.inputs
    assert plain.solution["weights"] == with_prediction.solution["weights"]


# --- The API flow -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_numbers_before_the_prediction_are_409_and_use_nothing(api):
    ex = create(api, predict="token_0")
    r = api.post(submit_url(ex["id"]), {"answers": numeric_solution(ex["id"])}, format="json")
    assert r.status_code == 409
    body = r.json()
    assert "Predict first" in body["detail"]
    assert "only itself" in body["answers"]["prediction"][0]
    assert Exercise.objects.get(pk=ex["id"]).attempts_used == 0
    assert not Attempt.objects.exists() and not Prediction.objects.exists()


@pytest.mark.django_db
def test_an_answer_not_among_the_choices_is_400_naming_part_and_choices(api):
    ex = create(api, predict="token_0")
    for bad in ("maybe", 0, None, ["only itself"]):
        r = api.post(submit_url(ex["id"]), {"answers": {"prediction": bad}}, format="json")
        assert r.status_code == 400, bad
        message = r.json()["answers"]["prediction"][0]
        assert "'only itself'" in message and "'every token equally'" in message
    assert not Prediction.objects.exists()


@pytest.mark.django_db
def test_the_prediction_is_submitted_on_its_own(api):
    ex = create(api, predict="token_0")
    answers = {"prediction": "only itself", **numeric_solution(ex["id"])}
    r = api.post(submit_url(ex["id"]), {"answers": answers}, format="json")
    assert r.status_code == 400
    assert "on its own" in r.json()["answers"]["weights"][0]
    assert not Prediction.objects.exists()


@pytest.mark.django_db
def test_prediction_then_numbers_shows_the_prediction_beside_them(api, learner):
    ex = create(api, predict="token_0")
    r = api.post(
        submit_url(ex["id"]), {"answers": {"prediction": "every token equally"}}, format="json"
    )
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["prediction"]["answer"] == "every token equally"
    assert body["attempts"] == {"used": 0, "max": 3, "remaining": 3}
    assert body["next"] == ["weights"]
    assert "expected" not in body["prediction"]  # the numbers tell, not the server
    stored = Prediction.objects.get()
    assert (stored.owner, stored.exercise_id, stored.ask) == (learner, ex["id"], "prediction")
    assert (stored.answer, stored.expected, stored.correct) == (
        "every token equally",
        "only itself",
        False,
    )
    detail = api.get(f"{EXERCISES}{ex['id']}/").json()
    assert detail["prediction"]["answer"] == "every token equally"
    assert detail["attempts"]["used"] == 0

    again = api.post(
        submit_url(ex["id"]), {"answers": {"prediction": "only itself"}}, format="json"
    )
    assert again.status_code == 409
    assert "already recorded" in again.json()["detail"]
    assert Prediction.objects.get().answer == "every token equally"

    r = api.post(submit_url(ex["id"]), {"answers": numeric_solution(ex["id"])}, format="json")
    assert r.status_code == 200
    result = r.json()
    assert result["correct"] is True and result["attempt"] == 1
    assert list(result["parts"]) == ["weights"]
    assert result["prediction"] == {
        "part": "prediction",
        "question": (
            "Concept check: with the causal mask on, what does the first token (token 1) attend to?"
        ),
        "answer": "every token equally",
        "expected": "only itself",
        "correct": False,
        "message": "You predicted 'every token equally'; the numbers say 'only itself'.",
    }
    assert result["solution"]["prediction"] == "only itself"


@pytest.mark.django_db
def test_exercises_without_a_prediction_answer_prediction_null(api):
    ex = create(api, kind="causal")
    assert ex["prediction"] is None
    r = api.post(submit_url(ex["id"]), {"answers": numeric_solution(ex["id"])}, format="json")
    assert r.status_code == 200 and r.json()["prediction"] is None


@pytest.mark.django_db
def test_another_learners_exercise_is_404_and_stores_nothing(api, other_api):
    ex = create(api, predict="token_0")
    r = other_api.post(
        submit_url(ex["id"]), {"answers": {"prediction": "only itself"}}, format="json"
    )
    assert r.status_code == 404
    assert not Prediction.objects.exists()


@pytest.mark.django_db
def test_schema_documents_choices_and_the_prediction_result(anon_api):
    schema = anon_api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    ask = schema["components"]["schemas"]["Ask"]["properties"]
    assert "choices" in ask and "question" in ask
    assert "SubmitOrPredictionResult" in schema["components"]["schemas"]
    assert "prediction" in schema["components"]["schemas"]["SubmitResult"]["properties"]
    assert "predictions_30d" in schema["components"]["schemas"]["Stats"]["properties"]


# --- Review-bound exercises -----------------------------------------------------------------


@pytest.fixture
def predict_deck(db):
    deck = Deck.objects.create(slug="predict", title="Predict")
    Card.objects.create(
        deck=deck,
        kind="exercise",
        prompt="Causal mask",
        exercise={"kind": "causal", "params": {"predict": "token_0"}},
    )
    return deck


@pytest.mark.django_db
def test_the_prediction_records_no_review_the_first_numbers_do(api, predict_deck, learner):
    with time_machine.travel(START, tick=False):
        api.post("/api/v1/decks/predict/enroll/")
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        item = api.get("/api/v1/reviews/due/").json()["results"][0]
        ex = item["exercise"]
        assert ex["asks"][0]["choices"]
        r = api.post(
            submit_url(ex["id"]), {"answers": {"prediction": "only itself"}}, format="json"
        )
        assert r.status_code == 200 and r.json()["review"] is None
        assert not ReviewLog.objects.exists()
        assert api.get("/api/v1/reviews/due/").json()["count"] == 1
        r = api.post(submit_url(ex["id"]), {"answers": numeric_solution(ex["id"])}, format="json")
        assert r.json()["review"]["result"] == "pass"
        assert ReviewLog.objects.get().result == "pass"
        assert ExerciseBinding.objects.get().review_id is not None
        assert api.get("/api/v1/reviews/due/").json()["count"] == 0


# --- Stats and the dashboard ---------------------------------------------------------------


@pytest.mark.django_db
def test_stats_count_predictions_of_the_last_30_days(api, learner, other_learner):
    with time_machine.travel(START - dt.timedelta(days=40), tick=False):
        old = create(api, predict="token_0")
        api.post(submit_url(old["id"]), {"answers": {"prediction": "only itself"}}, format="json")
    with time_machine.travel(START, tick=False):
        assert api.get("/api/v1/stats/").json()["predictions_30d"] == {
            "made": 0,
            "right": 0,
            "accuracy": None,
        }
        for answer in ("only itself", "only itself", "every token equally"):
            ex = create(api, predict="token_0")
            api.post(submit_url(ex["id"]), {"answers": {"prediction": answer}}, format="json")
        api.post(
            "/api/v1/attention/predictions/",
            {"preset": "identical", "answer": "not uniform"},
            format="json",
        )
        Prediction.objects.create(
            owner=other_learner, ask="playground:bag", answer="bag", expected="bag", correct=True
        )
        stats = api.get("/api/v1/stats/").json()
        assert stats["predictions_30d"] == {"made": 4, "right": 2, "accuracy": 0.5}
        client = Client()
        client.force_login(learner)
        html = client.get("/").content.decode()
        assert 'id="prediction-accuracy"' in html
        assert "50%" in html and "2 of 4" in html


# --- The exercise page ----------------------------------------------------------------------


@pytest.mark.django_db
def test_the_page_asks_the_prediction_first_then_opens_the_numbers(api, learner):
    ex = create(api, predict="token_0")
    client = Client()
    client.force_login(learner)
    page = f"/exercises/{ex['id']}/"
    post = f"/exercises/{ex['id']}/submit/"
    html = client.get(page).content.decode()
    assert 'id="prediction-form"' in html and 'type="radio"' in html
    assert 'id="answer-form"' not in html and 'id="numbers-closed"' in html

    # Numbers first: refused beside the prediction, nothing used.
    r = client.post(post, {"answer-weights-0-0": "1"})
    assert r.status_code == 400
    assert "Predict first" in r.content.decode()
    assert Exercise.objects.get(pk=ex["id"]).attempts_used == 0

    r = client.post(post, {"phase": "prediction"})
    assert r.status_code == 400 and "choose one of" in r.content.decode()

    r = client.post(post, {"phase": "prediction", "answer-prediction": "only itself"})
    assert r.status_code == 302
    assert Prediction.objects.get().answer == "only itself"
    html = client.get(page).content.decode()
    assert 'id="prediction-made"' in html and 'id="answer-form"' in html

    weights = numeric_solution(ex["id"])["weights"]
    cells = {
        f"answer-weights-{i}-{j}": f"{v:.4f}"
        for i, row in enumerate(weights)
        for j, v in enumerate(row)
    }
    assert client.post(post, cells).status_code == 302
    html = client.get(page).content.decode()
    assert 'id="prediction-verdict"' in html and "the numbers agree" in html
    assert Exercise.objects.get(pk=ex["id"]).solved


@pytest.mark.django_db
def test_the_review_page_asks_the_prediction_of_a_due_exercise_card(api, predict_deck, learner):
    with time_machine.travel(START, tick=False):
        api.post("/api/v1/decks/predict/enroll/")
    with time_machine.travel(START + dt.timedelta(days=1), tick=False):
        client = Client()
        client.force_login(learner)
        html = client.get("/review/").content.decode()
        assert 'id="prediction-form"' in html and 'id="answer-form"' not in html
        exercise = Exercise.objects.get(owner=learner)
        r = client.post(
            f"/exercises/{exercise.pk}/submit/",
            {"phase": "prediction", "answer-prediction": "only itself"},
        )
        assert r.status_code == 302
        assert not ReviewLog.objects.exists()
        html = client.get("/review/").content.decode()
        assert 'id="prediction-made"' in html and 'id="answer-form"' in html


@pytest.mark.django_db
def test_a_purged_exercise_keeps_its_prediction_in_the_stats(api, learner):
    with time_machine.travel(START, tick=False):
        ex = create(api, predict="token_0")
        api.post(submit_url(ex["id"]), {"answers": {"prediction": "only itself"}}, format="json")
    with time_machine.travel(START + dt.timedelta(days=8), tick=False):
        purged = purge_stale_exercises(
            older_than=START + dt.timedelta(days=1), at=START + dt.timedelta(days=8)
        )
        assert purged == 1
        assert Prediction.objects.get().exercise_id is None
        assert api.get("/api/v1/stats/").json()["predictions_30d"]["made"] == 1
