import threading

import pytest
from django.db import connection

from exercises.models import Attempt, Exercise
from exercises.services import exercise_create

KINDS_URL = "/api/v1/exercises/kinds/"
LIST_URL = "/api/v1/exercises/"


def detail(pk):
    return f"/api/v1/exercises/{pk}/"


def submit_url(pk):
    return f"/api/v1/exercises/{pk}/submit/"


def create(api, kind="attention", **params):
    r = api.post(LIST_URL, {"kind": kind, "params": params}, format="json")
    assert r.status_code == 201, r.json()
    return r.json()


def wrong_answers(ex):
    return {a["name"]: _fill(a["shape"], 99.0) for a in ex["asks"]}


def _fill(shape, v):
    if not shape:
        return v
    if len(shape) == 1:
        return [v] * shape[0]
    return [[v] * shape[1] for _ in range(shape[0])]


def right_answers(ex):
    return Exercise.objects.get(pk=ex["id"]).solution


@pytest.mark.django_db
def test_kinds_catalogue_lists_every_kind_with_typed_params(api):
    r = api.get(KINDS_URL)
    assert r.status_code == 200
    body = r.json()
    assert body["count"] == len(body["results"]) >= 9
    attention = next(k for k in body["results"] if k["kind"] == "attention")
    assert attention["params"]["n"] == {
        "type": "int",
        "default": 3,
        "help": attention["params"]["n"]["help"],
        "min": 2,
        "max": 8,
    }
    assert attention["params"]["mask"]["choices"] == ["none", "causal", "padding"]
    assert attention["params"]["scale"]["type"] == "bool"


@pytest.mark.django_db
def test_everything_needs_credentials(anon_api):
    for method, url in [
        ("get", KINDS_URL),
        ("get", LIST_URL),
        ("post", LIST_URL),
        ("get", detail(1)),
        ("post", submit_url(1)),
        ("post", "/api/v1/attention/"),
    ]:
        assert getattr(anon_api, method)(url, {}, format="json").status_code == 401


@pytest.mark.django_db
def test_create_returns_the_exercise_without_solution(api):
    ex = create(api, seed=42)
    assert ex["kind"] == "attention"
    assert ex["params"] == {
        "n": 3,
        "d_k": 2,
        "d_v": 2,
        "mask": "none",
        "scale": True,
        "max_abs": 2,
        "predict": "none",
        "seed": 42,
    }
    assert ex["tolerance"] == {"rtol": 0.01, "atol": 0.005}
    assert ex["attempts"] == {"used": 0, "max": 3, "remaining": 3}
    assert ex["solved"] is False and ex["solution"] is None
    assert [a["name"] for a in ex["asks"]] == ["scores", "weights", "output"]
    assert ex["inputs"]["mask"] == [[False] * 3] * 3
    assert "$" in ex["prompt"]


@pytest.mark.django_db
def test_same_seed_same_inputs_and_server_picks_a_seed(api):
    a, b = create(api, seed=9), create(api, seed=9)
    assert a["inputs"] == b["inputs"] and a["id"] != b["id"]
    c = create(api)
    assert isinstance(c["params"]["seed"], int)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body, field",
    [
        ({"kind": "nope"}, "kind"),
        ({}, "kind"),
        ({"kind": "attention", "params": {"n": 99}}, "params"),
        ({"kind": "attention", "params": {"n": True}}, "params"),
        ({"kind": "attention", "params": {"bogus": 1}}, "params"),
        ({"kind": "attention", "params": [1]}, "params"),
        ({"kind": "attention", "params": {"seed": -3}}, "params"),
    ],
)
def test_bad_create_is_400_naming_the_field(api, body, field):
    r = api.post(LIST_URL, body, format="json")
    assert r.status_code == 400
    assert field in r.json()
    assert Exercise.objects.count() == 0


@pytest.mark.django_db
def test_param_errors_are_nested_by_parameter(api):
    r = api.post(LIST_URL, {"kind": "attention", "params": {"n": 99}}, format="json")
    assert "n" in r.json()["params"]
    assert "2 to 8" in r.json()["params"]["n"][0]


def parts_of(solution):
    """A worked solution's expected answers, without its steps."""
    return {k: v for k, v in solution.items() if k != "steps"}


@pytest.mark.django_db
def test_right_answer_solves_and_reveals_the_solution(api):
    ex = create(api, kind="projection")
    r = api.post(submit_url(ex["id"]), {"answers": right_answers(ex)}, format="json")
    assert r.status_code == 200
    res = r.json()
    assert res["correct"] is True and res["score"] == 1.0 and res["solved"] is True
    assert res["attempts"] == {"used": 1, "max": 3, "remaining": 2}
    assert parts_of(res["solution"]) == right_answers(ex)
    assert res["hint"] is None and res["first_wrong_step"] is None
    assert not any(s["first_wrong"] for s in res["solution"]["steps"])
    assert res["attempt"] == 1
    fetched = api.get(detail(ex["id"])).json()
    assert fetched["solved"] is True and fetched["solution"] is not None


@pytest.mark.django_db
def test_lesson_hand_answers_rounded_to_three_decimals_pass(api):
    ex = create(api, kind="projection", vary=False)
    answers = {
        "Q": [[1, 0], [0, 1], [1, 1]],
        "K": [[1, 0], [1, 1], [0, 1]],
        "V": [[2, 0], [0, 2], [1, 1]],
        "weights": [[0.401, 0.401, 0.198], [0.198, 0.401, 0.401], [0.248, 0.503, 0.248]],
        "output": [[1.0, 1.0], [0.797, 1.203], [0.745, 1.255]],
    }
    assert api.post(submit_url(ex["id"]), {"answers": answers}, format="json").json()["correct"]


@pytest.mark.django_db
def test_attempts_run_out_then_409_and_the_solution_shows(api):
    ex = create(api)
    for used in (1, 2):
        res = api.post(submit_url(ex["id"]), {"answers": wrong_answers(ex)}, format="json").json()
        assert res["correct"] is False and res["solution"] is None
        assert res["attempts"]["used"] == used
        assert res["parts"]["scores"]["wrong_cells"] == [[i, j] for i in range(3) for j in range(3)]
    last = api.post(submit_url(ex["id"]), {"answers": wrong_answers(ex)}, format="json").json()
    assert last["attempts"] == {"used": 3, "max": 3, "remaining": 0}
    assert parts_of(last["solution"]) == right_answers(ex)
    assert last["first_wrong_step"] == "scores"
    assert [s["name"] for s in last["solution"]["steps"] if s["first_wrong"]] == ["scores"]
    r = api.post(submit_url(ex["id"]), {"answers": right_answers(ex)}, format="json")
    assert r.status_code == 409
    assert r.json()["attempts"]["remaining"] == 0
    assert Attempt.objects.filter(exercise_id=ex["id"]).count() == 3
    assert Exercise.objects.get(pk=ex["id"]).solved is False


@pytest.mark.django_db
def test_a_solved_exercise_takes_no_more_submissions(api):
    ex = create(api)
    api.post(submit_url(ex["id"]), {"answers": right_answers(ex)}, format="json")
    r = api.post(submit_url(ex["id"]), {"answers": wrong_answers(ex)}, format="json")
    assert r.status_code == 409
    body = r.json()
    assert "already solved" in body["detail"] and body["solved"] is True
    assert body["attempts"] == {"used": 1, "max": 3, "remaining": 2}
    assert parts_of(body["solution"]) == right_answers(ex)
    stored = Exercise.objects.get(pk=ex["id"])
    assert stored.attempts_used == 1 and stored.solved
    assert Attempt.objects.filter(exercise_id=ex["id"]).count() == 1
    # The right answers again are refused too: a solved exercise is closed.
    assert (
        api.post(submit_url(ex["id"]), {"answers": right_answers(ex)}, format="json").status_code
        == 409
    )


@pytest.mark.django_db
def test_wrong_answer_gets_a_diagnosis(api):
    ex = create(api, seed=5)
    sol = right_answers(ex)
    import numpy as np

    from exercises.kinds import get_kind

    variant = get_kind("attention").answers_under(
        Exercise.objects.get(pk=ex["id"]).inputs, {"scale": "none"}
    )
    answers = {
        "scores": variant["scores"].tolist(),
        "weights": variant["weights"].tolist(),
        "output": variant["output"].tolist(),
    }
    assert not np.allclose(answers["scores"], sol["scores"])
    res = api.post(submit_url(ex["id"]), {"answers": answers}, format="json").json()
    # Named once, at the first wrong step; the later parts follow from the learner's scores.
    assert [(d["code"], d["parts"]) for d in res["diagnosis"]] == [("no_scale", ["scores"])]
    assert "√dₖ" in res["diagnosis"][0]["text"]
    assert res["diagnosis"][0]["lesson_section"] == "worked-example"
    assert res["first_wrong"] == "scores"
    assert res["parts"]["scores"]["follows"] is False
    for part in ("weights", "output"):
        assert res["parts"][part]["correct"] is False
        assert res["parts"][part]["follows"] is True
        assert "sqrt(d_k)" not in res["parts"][part]["message"]
    assert res["parts"]["weights"]["follows_from"] == "your scores"
    # Each part that follows earns at least half its credit.
    assert res["correct"] is False and 1 / 3 <= res["score"] < 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "answers",
    [
        {"scores": "x"},
        {"scores": [[1, 2, 3]] * 3, "weights": [[True] * 3] * 3, "output": [[0, 0]] * 3},
        {"scores": [[1, 2, 3]] * 3, "weights": [[1, 2, 3]] * 3, "output": [[0, 0, 0]] * 2},
        {"scores": [[1, 2, 3]] * 3, "weights": [[1, 2, 3]] * 3, "output": [[0, 0]] * 3, "extra": 1},
        {"scores": [[1, 2, "3"]] * 3, "weights": [[1, 2, 3]] * 3, "output": [[0, 0]] * 3},
    ],
)
def test_malformed_answers_are_400_and_use_no_attempt(api, answers):
    ex = create(api)
    r = api.post(submit_url(ex["id"]), {"answers": answers}, format="json")
    assert r.status_code == 400
    errors = r.json()["answers"]
    assert all(isinstance(v, list) and v for v in errors.values())
    assert Exercise.objects.get(pk=ex["id"]).attempts_used == 0
    assert not Attempt.objects.exists()


@pytest.mark.django_db
def test_nan_in_the_body_is_400(api):
    ex = create(api)
    r = api.generic(
        "POST",
        submit_url(ex["id"]),
        '{"answers": {"scores": NaN}}',
        content_type="application/json",
    )
    assert r.status_code == 400
    assert Exercise.objects.get(pk=ex["id"]).attempts_used == 0


@pytest.mark.django_db
@pytest.mark.parametrize("body", [{}, {"answers": [1]}, {"answers": "x"}])
def test_a_body_without_an_answers_object_is_400(api, body):
    ex = create(api)
    assert api.post(submit_url(ex["id"]), body, format="json").status_code == 400


@pytest.mark.django_db
def test_another_learners_exercise_is_404(api, other_api):
    ex = create(api)
    assert other_api.get(detail(ex["id"])).status_code == 404
    r = other_api.post(submit_url(ex["id"]), {"answers": right_answers(ex)}, format="json")
    assert r.status_code == 404
    assert Exercise.objects.get(pk=ex["id"]).attempts_used == 0
    assert other_api.get(LIST_URL).json()["count"] == 0
    assert api.get(detail(999999)).status_code == 404


@pytest.mark.django_db
def test_list_is_mine_newest_first_and_paginated(api):
    ids = [create(api, seed=i)["id"] for i in range(3)]
    body = api.get(LIST_URL).json()
    assert body["count"] == 3 and [e["id"] for e in body["results"]] == ids[::-1]
    assert body["results"][0]["solution"] is None
    assert api.get(LIST_URL + "?page=9").status_code == 404
    assert api.get(LIST_URL + "?page_size=0").status_code == 400


@pytest.mark.django_db
def test_submit_view_core_is_an_overridable_method(api, learner):
    from exercises.api import ExerciseSubmitView

    ex = exercise_create(owner=learner, kind="scaling", params={"d_k": 4})
    view = ExerciseSubmitView()
    request = type("R", (), {"user": learner})()
    result = view.submit(
        request,
        ex.pk,
        {
            "variance": 4,
            "weights_scaled": ex.solution["weights_scaled"],
            "weights_unscaled": ex.solution["weights_unscaled"],
        },
    )
    assert result["correct"] is True


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_submissions_never_exceed_the_attempts(learner, api):
    ex = create(api)
    answers = wrong_answers(ex)
    statuses = []
    barrier = threading.Barrier(8)

    def hammer():
        from rest_framework.test import APIClient

        client = APIClient()
        client.force_authenticate(learner)
        barrier.wait()
        try:
            statuses.append(
                client.post(submit_url(ex["id"]), {"answers": answers}, format="json").status_code
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [200] * 3 + [409] * 5
    assert Exercise.objects.get(pk=ex["id"]).attempts_used == 3
    assert sorted(
        Attempt.objects.filter(exercise_id=ex["id"]).values_list("number", flat=True)
    ) == [1, 2, 3]


@pytest.mark.django_db
@pytest.mark.parametrize("pk", ["-1", "0", str(2**70)])
def test_impossible_ids_are_json_404(api, pk):
    r = api.get(f"/api/v1/exercises/{pk}/")
    assert r.status_code == 404 and "detail" in r.json()


@pytest.mark.django_db
def test_null_answers_for_a_missing_exercise_are_404(api):
    assert api.post(submit_url(424242), {"answers": {"x": None}}, format="json").status_code == 404
