"""Predictions, the ablation kind, error carried forward and the variant guarantee together."""

import datetime as dt

import numpy as np
import pytest
from django.contrib.admin.sites import site
from django.test import Client

from exercises import predictions
from exercises.checking import MISTAKES, check_answers
from exercises.kinds import get_kind
from exercises.kinds.base import STEP_DECIMALS
from exercises.models import Exercise, Prediction
from exercises.services import exercise_build
from exercises.variants import accepted, draw_variant

EXERCISES = "/api/v1/exercises/"


def submit(api, exercise_id, answers):
    return api.post(f"{EXERCISES}{exercise_id}/submit/", {"answers": answers}, format="json")


def create(api, kind, **params):
    r = api.post(EXERCISES, {"kind": kind, "params": params}, format="json")
    assert r.status_code == 201, r.content
    return r.json()


# --- The ablation kind and the variant guarantee -----------------------------------------------


@pytest.mark.parametrize("case", ["random", "reliance", "mixed", "redundant"])
def test_ablation_variants_catch_every_registered_mistake_over_many_seeds(case):
    kind = get_kind("ablation")
    params = kind.normalize_params({"case": case, "n_inputs": 3, "n": 3})
    verdicts, made = set(), set()
    for seed in range(150):
        g = draw_variant(kind, params, seed)
        verdicts.add(g.solution["verdict"])
        assert accepted(kind, g, kind.answers_under(g.inputs, {}, STEP_DECIMALS)), seed
        assert accepted(kind, g, kind.answers_under(g.inputs, {})), seed
        for code in kind.mistakes:
            for decimals in (None, STEP_DECIMALS):
                wrong = kind.answers_under(g.inputs, MISTAKES[code].recipe, decimals)
                if wrong is None:
                    continue  # a verdict mistake that says nothing different here
                made.add(code)
                assert not accepted(kind, g, wrong), (seed, code, decimals)
    # The numeric mistakes apply to every variant; the verdict mistakes where they can.
    assert {"no_scale", "mask_after_softmax", "ablation_masked_query"} <= made
    if case == "random":
        assert made == set(kind.mistakes)
    expected = {"random": {"reliance", "mixed", "redundant"}}
    assert verdicts == expected.get(case, {case})


def test_ablation_answers_under_other_kinds_mistakes_is_none():
    kind = get_kind("ablation")
    g = draw_variant(kind, kind.normalize_params({}), 3)
    assert kind.answers_under(g.inputs, {"scale": "d_k"}) is None
    assert kind.answers_under(g.inputs, {"mask": "zero_score"}) is None
    assert kind.answers_under(g.inputs, {"scores": "k_q"}) is None


def test_ablation_change_and_verdict_follow_from_the_learners_own_probabilities():
    kind = get_kind("ablation")
    g = draw_variant(kind, kind.normalize_params({"case": "reliance"}), 11)
    wrong_with = [p + 0.1 for p in g.solution["p_with"]]
    change = [b - a for a, b in zip(wrong_with, g.solution["p_without"], strict=True)]
    large = [abs(c) >= 0.05 for c in change]
    verdict = (
        "redundant"
        if not any(large)
        else "reliance"
        if all(large) and (all(c > 0 for c in change) or all(c < 0 for c in change))
        else "mixed"
    )
    answers = {**g.solution, "p_with": wrong_with, "change": change, "verdict": verdict}
    checked = check_answers(
        asks=g.asks,
        solution=g.solution,
        answers=answers,
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=kind,
    )
    assert not checked.correct
    assert checked.first_wrong == "p_with"
    assert checked.parts["change"].follows
    if verdict != g.solution["verdict"]:
        assert checked.parts["verdict"].follows
    assert 0 < checked.score < 1


def test_a_wrong_ablation_verdict_is_a_choice_not_a_number():
    kind = get_kind("ablation")
    g = draw_variant(kind, kind.normalize_params({"case": "redundant"}), 5)
    answers = {**g.solution, "verdict": "reliance"}
    checked = check_answers(
        asks=g.asks,
        solution=g.solution,
        answers=answers,
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=kind,
    )
    assert checked.first_wrong == "verdict"
    assert checked.parts["verdict"].message.startswith("Not the choice the numbers support.")


# --- Predictions with the new marking ----------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kind", "params"),
    [
        ("attention", {"mask": "causal", "predict": "top_key", "seed": 4}),
        ("causal", {"predict": "token_0", "n": 3, "d_k": 2, "seed": 4}),
    ],
)
def test_causal_exercise_with_a_prediction_marks_follow_on_parts(api, kind, params):
    ex = create(api, kind, **params)
    assert ex["asks"][0]["choices"]
    stored = Exercise.objects.get(pk=ex["id"])
    assert submit(api, ex["id"], {"prediction": stored.solution["prediction"]}).status_code == 200
    wrong = get_kind(kind).answers_under(stored.inputs, MISTAKES["no_scale"].recipe)
    numeric = [a["name"] for a in predictions.numeric_asks(stored.asks)]
    answers = {name: np.asarray(wrong[name]).tolist() for name in numeric}
    r = submit(api, ex["id"], answers)
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["correct"] is False
    assert "prediction" not in body["parts"]
    assert body["first_wrong"] == numeric[0]
    # Every later part follows from the learner's own unscaled scores: half credit each.
    later = [body["parts"][name] for name in numeric[1:]]
    assert all(part["follows"] and not part["correct"] for part in later)
    assert len(later) == (2 if kind == "attention" else 0)
    assert [d["code"] for d in body["diagnosis"]] == ["no_scale"]
    assert body["prediction"]["answer"] == stored.solution["prediction"]
    assert body["attempts"]["used"] == 1


@pytest.mark.django_db
def test_scaling_with_a_prediction_uses_the_new_score_drawing(api):
    ex = create(api, "scaling", predict="scale_effect", d_k=64, n=3, seed=2)
    stored = Exercise.objects.get(pk=ex["id"])
    assert stored.asks[0]["choices"] == ["sharper", "flatter", "unchanged"]
    assert stored.solution["prediction"] == predictions.scale_effect(stored.inputs["scores"], 64)
    # The unscaled row saturates (variance d_k): removing the scale sharpens it.
    assert stored.solution["prediction"] == "sharper"
    assert max(stored.solution["weights_unscaled"]) >= 0.9
    r = submit(api, ex["id"], {"prediction": "flatter"})
    assert r.status_code == 200 and r.json()["prediction"]["answer"] == "flatter"
    # The divided-by-d_k recipe ({"scale": "d_k"}) is diagnosed after the prediction.
    wrong = get_kind("scaling").answers_under(stored.inputs, {"scale": "d_k"})
    answers = {
        name: np.asarray(wrong[name]).tolist()
        for name in ("variance", "weights_scaled", "weights_unscaled")
    }
    body = submit(api, ex["id"], answers).json()
    assert body["correct"] is False
    assert [d["code"] for d in body["diagnosis"]] == ["divided_by_d_k"]
    assert body["prediction"]["correct"] is False and body["prediction"]["expected"] == "sharper"
    answers = {k: v for k, v in stored.solution.items() if k != "prediction"}
    solved = submit(api, ex["id"], answers).json()
    assert solved["correct"] is True and solved["solved"] is True


@pytest.mark.django_db
def test_a_prediction_on_a_solved_exercise_is_409_and_changes_nothing(api):
    ex = create(api, "causal", predict="token_0", seed=9)
    stored = Exercise.objects.get(pk=ex["id"])
    assert submit(api, ex["id"], {"prediction": stored.solution["prediction"]}).status_code == 200
    answers = {k: v for k, v in stored.solution.items() if k != "prediction"}
    assert submit(api, ex["id"], answers).json()["solved"] is True
    again = submit(api, ex["id"], {"prediction": "every token equally"})
    assert again.status_code == 409
    assert "already recorded" in again.json()["detail"]
    closed = submit(api, ex["id"], answers)
    assert closed.status_code == 409 and closed.json()["solved"] is True
    assert Prediction.objects.filter(exercise_id=ex["id"]).count() == 1
    stored.refresh_from_db()
    assert stored.attempts_used == 1


@pytest.mark.django_db
def test_an_exercise_without_its_prediction_but_solved_is_closed_for_predictions(api, learner):
    ex = create(api, "causal", predict="token_0", seed=10)
    Exercise.objects.filter(pk=ex["id"]).update(solved=True, attempts_used=1)
    r = submit(api, ex["id"], {"prediction": "only itself"})
    assert r.status_code == 409 and r.json()["solved"] is True
    assert not Prediction.objects.filter(exercise_id=ex["id"]).exists()


@pytest.mark.django_db
def test_review_bound_exercises_built_privately_keep_their_prediction(learner):
    practice = exercise_build(
        owner=learner, kind="causal", params={"predict": "token_0", "seed": 5}
    )
    bound = exercise_build(
        owner=learner, kind="causal", params={"predict": "token_0", "seed": 5}, bound=True
    )
    assert "seed" not in bound.params
    assert bound.asks[0]["name"] == "prediction" and bound.asks[0]["choices"]
    assert bound.solution["prediction"] == predictions.ONLY_ITSELF
    assert practice.inputs != bound.inputs or practice.seed != bound.seed


@pytest.mark.django_db
def test_ablation_page_heat_map_rows_are_inputs(learner):
    client = Client()
    client.force_login(learner)
    ex = exercise_build(owner=learner, kind="ablation", params={"seed": 1})
    ex.save()
    Exercise.objects.filter(pk=ex.pk).update(attempts_used=ex.max_attempts)
    html = client.get(f"/exercises/{ex.pk}/").content.decode()
    assert "Rows are inputs" in html and "Rows are queries" not in html
    assert "input 1" in html


@pytest.mark.django_db
def test_predictions_are_in_the_admin_read_only(api, learner):
    assert Prediction in site._registry
    ex = create(api, "causal", predict="token_0", seed=3)
    submit(api, ex["id"], {"prediction": "only itself"})
    from django.contrib.auth import get_user_model

    staff = get_user_model().objects.create_superuser("root", "root@example.org", "pw-12345678")
    client = Client()
    client.force_login(staff)
    listing = client.get("/admin/exercises/prediction/")
    assert listing.status_code == 200 and "only itself" in listing.content.decode()
    pk = Prediction.objects.get().pk
    assert client.get(f"/admin/exercises/prediction/{pk}/change/").status_code == 200
    assert (
        client.post(f"/admin/exercises/prediction/{pk}/delete/", {"post": "yes"}).status_code == 403
    )
    assert client.get("/admin/exercises/prediction/add/").status_code == 403
    assert Prediction.objects.count() == 1


@pytest.mark.django_db
def test_predictions_are_in_the_learners_export(api, other_api):
    ex = create(api, "causal", predict="token_0", seed=3)
    submit(api, ex["id"], {"prediction": "only itself"})
    other = create(other_api, "causal", predict="token_0", seed=3)
    submit(other_api, other["id"], {"prediction": "every token equally"})
    data = api.get("/api/v1/me/export/").json()
    assert [(p["exercise_id"], p["answer"], p["correct"]) for p in data["predictions"]] == [
        (ex["id"], "only itself", True)
    ]
    assert dt.datetime.fromisoformat(data["predictions"][0]["created_at"].replace("Z", "+00:00"))
