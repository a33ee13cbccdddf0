"""The ablation kind: does the model rely on the highlighted token, or is its weight decoration?"""

import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from django.test import Client

from exercises.cells import cell_name
from exercises.checking import check_answers
from exercises.kinds import ablation, get_kind

EXERCISES = "/api/v1/exercises/"
SEEDS = range(60)


def reference(inputs):
    """A loop-based read-out, independent of the engine: softmax and sigmoid by hand."""
    q, w, b, h = inputs["q"], inputs["w"], inputs["b"], inputs["highlighted"]
    out = {"weights": [], "p_with": [], "p_without": []}
    for m in range(inputs["n_inputs"]):
        K, V = inputs[f"K_{m + 1}"], inputs[f"V_{m + 1}"]
        for blocked in (None, h):
            keys = [j for j in range(len(K)) if j != blocked]
            scores = {
                j: sum(qi * ki for qi, ki in zip(q, K[j], strict=True)) / math.sqrt(2) for j in keys
            }
            top = max(scores.values())
            e = {j: math.exp(s - top) for j, s in scores.items()}
            total = sum(e.values())
            a = {j: e[j] / total for j in keys}
            o = [sum(a[j] * V[j][c] for j in keys) for c in range(2)]
            p = 1 / (1 + math.exp(-(sum(wi * oi for wi, oi in zip(w, o, strict=True)) + b)))
            if blocked is None:
                out["weights"].append([a[j] for j in range(len(K))])
                out["p_with"].append(p)
            else:
                out["p_without"].append(p)
    return out


def variant(seed, **params):
    kind = get_kind("ablation")
    normalized = kind.normalize_params({**params, "seed": seed})
    return kind.generate(normalized, np.random.default_rng(seed))


@pytest.mark.parametrize("seed", range(15))
def test_solution_matches_a_loop_based_reference(seed):
    g = variant(seed, n=4, n_inputs=3)
    ref = reference(g.inputs)
    for part in ("weights", "p_with", "p_without"):
        np.testing.assert_allclose(g.solution[part], ref[part], atol=1e-9)
    change = np.asarray(ref["p_without"]) - np.asarray(ref["p_with"])
    np.testing.assert_allclose(g.solution["change"], change, atol=1e-9)
    np.testing.assert_allclose(np.sum(g.solution["weights"], axis=1), 1.0)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ([0.12, 0.3, 0.08], "reliance"),  # large and consistent
        ([-0.1, -0.2, -0.06], "reliance"),
        ([0.12, -0.3, 0.08], "decoration"),  # large but inconsistent
        ([0.12, 0.01, 0.08], "decoration"),  # one input barely moves
        ([0.0, 0.0, 0.0], "decoration"),
    ],
)
def test_the_lessons_rule(change, expected):
    assert ablation.verdict(np.asarray(change)) == expected


def test_both_verdicts_occur_and_the_high_weight_trap_among_them():
    verdicts, traps = [], 0
    for seed in SEEDS:
        g = variant(seed)
        verdicts.append(g.solution["verdict"])
        change = np.abs(g.solution["change"])
        # Never within hand-rounding of the threshold.
        assert not ((change > ablation.SMALL) & (change < ablation.LARGE)).any()
        weights = np.asarray(g.solution["weights"])
        h = g.inputs["highlighted"]
        top_everywhere = (weights.argmax(axis=1) == h).all()
        if g.solution["verdict"] == "decoration" and top_everywhere and (change <= 0.02).all():
            traps += 1  # the highest weight in every input, and removing it changes little
    assert 15 <= verdicts.count("reliance") <= 45
    assert 15 <= verdicts.count("decoration") <= 45
    assert traps >= 8


@pytest.mark.parametrize("case", ["reliance", "decoration"])
@pytest.mark.parametrize(("n", "n_inputs"), [(3, 2), (5, 5)])
def test_a_fixed_case_gives_its_verdict(case, n, n_inputs):
    for seed in range(10):
        g = variant(seed, case=case, n=n, n_inputs=n_inputs)
        assert g.solution["verdict"] == case
        assert [a["name"] for a in g.asks] == [
            "weights",
            "p_with",
            "p_without",
            "change",
            "verdict",
        ]
        assert g.asks[0]["shape"] == [n_inputs, n]
        assert g.asks[-1]["choices"] == ["reliance", "decoration"]


def test_same_seed_same_variant_and_the_prompt_states_the_rule():
    a, b = variant(11), variant(11)
    assert a.inputs == b.inputs and a.solution == b.solution
    assert f"at least {ablation.THRESHOLD}" in a.prompt
    assert "masked as a key" in a.prompt and "not of causation" in a.prompt
    assert f"token {a.inputs['highlighted']}" in a.prompt


def _check(g, answers):
    return check_answers(
        asks=g.asks,
        solution=g.solution,
        answers=answers,
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind="ablation",
    )


def _trap():
    for seed in SEEDS:
        g = variant(seed, case="decoration")
        w = np.asarray(g.solution["weights"])
        if (w.argmax(axis=1) == g.inputs["highlighted"]).all():
            return g
    raise AssertionError("no high-weight decoration variant drawn")


def test_high_weight_taken_as_reliance_is_diagnosed():
    g = _trap()
    answers = {**g.solution, "verdict": "reliance"}
    checked = _check(g, answers)
    assert not checked.correct
    assert checked.parts["verdict"].wrong_cells == [[]]
    assert [d["code"] for d in checked.diagnosis] == ["high_weight_as_reliance"]


def test_masking_the_token_as_a_query_is_diagnosed():
    g = variant(3, case="reliance")
    answers = {
        **g.solution,
        "p_without": g.solution["p_with"],
        "change": [0.0] * g.inputs["n_inputs"],
        "verdict": "decoration",
    }
    checked = _check(g, answers)
    # Only the first wrong step is diagnosed; the change follows from those probabilities.
    codes = {d["code"]: d["parts"] for d in checked.diagnosis}
    assert codes["ablation_masked_query"] == ["p_without"]
    assert checked.first_wrong == "p_without"
    assert "as a query" in checked.diagnosis[0]["text"]
    assert checked.parts["change"].follows and not checked.parts["change"].correct


def test_right_answers_are_correct():
    g = variant(5)
    assert _check(g, dict(g.solution)).correct


# --- Through the API and the page ---------------------------------------------------------------


@pytest.mark.django_db
def test_ablation_through_the_api(api):
    r = api.post(EXERCISES, {"kind": "ablation", "params": {"seed": 4}}, format="json")
    assert r.status_code == 201, r.content
    ex = r.json()
    assert ex["asks"][-1] == {
        "name": "verdict",
        "shape": [],
        "choices": ["reliance", "decoration"],
        "question": "Does the model rely on the highlighted token?",
    }
    assert ex["prediction"] is None  # the verdict is a part, answered with the numbers
    g = variant(4)
    url = f"{EXERCISES}{ex['id']}/submit/"
    bad = api.post(url, {"answers": {**g.solution, "verdict": "causation"}}, format="json")
    assert bad.status_code == 400
    assert "'reliance'" in bad.json()["answers"]["verdict"][0]
    missing = {k: v for k, v in g.solution.items() if k != "verdict"}
    r = api.post(url, {"answers": missing}, format="json")
    assert r.status_code == 400 and "one of 'reliance'" in r.json()["answers"]["verdict"][0]
    r = api.post(url, {"answers": g.solution}, format="json")
    assert r.status_code == 200 and r.json()["correct"] is True
    kinds = api.get("/api/v1/exercises/kinds/").json()["results"]
    assert kinds[-1]["kind"] == "ablation"


@pytest.mark.django_db
def test_the_page_renders_the_verdict_as_radio_buttons_and_checks_it(api, learner):
    ex = api.post(EXERCISES, {"kind": "ablation", "params": {"seed": 8}}, format="json").json()
    client = Client()
    client.force_login(learner)
    html = client.get(f"/exercises/{ex['id']}/").content.decode()
    assert 'type="radio" name="answer-verdict" value="reliance"' in html
    assert 'type="radio" name="answer-verdict" value="decoration"' in html
    g = variant(8)
    cells = {}
    for part in ("p_with", "p_without", "change"):
        cells.update({cell_name(part, (i,)): f"{v:.5f}" for i, v in enumerate(g.solution[part])})
    for i, row in enumerate(g.solution["weights"]):
        cells.update({cell_name("weights", (i, j)): f"{v:.5f}" for j, v in enumerate(row)})
    r = client.post(f"/exercises/{ex['id']}/submit/", cells)
    assert (
        r.status_code == 400 and "verdict: choose one of reliance, decoration" in r.content.decode()
    )
    r = client.post(
        f"/exercises/{ex['id']}/submit/", {**cells, "answer-verdict": g.solution["verdict"]}
    )
    assert r.status_code == 302
    html = client.get(f"/exercises/{ex['id']}/").content.decode()
    assert "Correct!" in html
    assert f'value="{g.solution["verdict"]}" checked' in html


def test_the_starter_deck_has_the_ablation_card_last():
    path = (
        Path(__file__).resolve().parents[2]
        / "cards"
        / "content"
        / "attention-and-transformers.yaml"
    )
    doc = yaml.safe_load(path.read_text())
    last = doc["cards"][-1]
    assert last["key"] == "ablation-reliance-test"
    assert last["exercise"]["kind"] == "ablation"
    get_kind("ablation").normalize_params(last["exercise"]["params"])
    by_key = {c["key"]: c for c in doc["cards"]}
    assert by_key["exercise-causal-mask"]["exercise"]["params"]["predict"] == "token_0"
    assert by_key["exercise-scaling"]["exercise"]["params"]["predict"] == "scale_effect"


@pytest.mark.parametrize("seed", range(10))
def test_no_diagnosis_on_right_answers_or_noise(seed):
    g = variant(seed)
    assert _check(g, dict(g.solution)).diagnosis == []
    noise = {
        name: (np.asarray(g.solution[name]) * 3 + 7).tolist()
        for name in ("weights", "p_with", "p_without", "change")
    }
    checked = _check(g, {**noise, "verdict": g.solution["verdict"]})
    assert checked.diagnosis == []
    assert checked.parts["verdict"].correct
