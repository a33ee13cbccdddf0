"""The ablation kind: does the model rely on the highlighted token, or is it redundant for the
output? (exercises/kinds/ablation.py)"""

import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from django.test import Client

from exercises.cells import cell_name
from exercises.checking import MISTAKES, check_answers
from exercises.kinds import ablation, get_kind
from exercises.kinds.base import HALF_UNIT
from exercises.variants import accepted, draw_variant, variant_problems
from tests.exercises import hand_solver as hs
from tests.exercises.hand_solver import hand_answers
from tests.exercises.kind_cases import KindCases

CASES = {
    "ablation": KindCases(
        solver=hs.ablation,
        example={"n_inputs": 3, "n": 3},
        largest=(
            {"n_inputs": 5, "n": 5},
            {"n_inputs": 5, "n": 5, "case": "reliance"},
            {"n_inputs": 5, "n": 5, "case": "redundant"},
        ),
        # Each case fixed at the starter deck's sizes too: a reliance draw there is where
        # e^s written to three decimals first moved p_without beyond its tolerance.
        hand_only=tuple(
            {"n_inputs": 3, "n": 3, "case": c} for c in ("reliance", "mixed", "redundant")
        ),
        seeds_vary=False,
    ),
}

EXERCISES = "/api/v1/exercises/"
SEEDS = range(60)


def reference(inputs, *, scale=True, renormalise=True):
    """A loop-based read-out, independent of the engine: softmax and sigmoid by hand.

    ``scale`` False leaves out 1/sqrt(d_k); ``renormalise`` False zeroes the blocked
    weight after the softmax and keeps the others: the two wrong methods of the tests.
    """
    q, w, b, h = inputs["q"], inputs["w"], inputs["b"], inputs["highlighted"]
    out = {"weights": [], "p_with": [], "p_without": []}
    for m in range(inputs["n_inputs"]):
        K, V = inputs[f"K_{m + 1}"], inputs[f"V_{m + 1}"]
        for blocked in (None, h):
            keys = [j for j in range(len(K)) if j != blocked or not renormalise]
            scores = {
                j: sum(qi * ki for qi, ki in zip(q, K[j], strict=True))
                / (math.sqrt(2) if scale else 1)
                for j in keys
            }
            top = max(scores.values())
            e = {j: math.exp(s - top) for j, s in scores.items()}
            total = sum(e.values())
            a = {j: e[j] / total for j in keys}
            if blocked is not None and not renormalise:
                a[blocked] = 0.0
            o = [sum(a[j] * V[j][c] for j in keys) for c in range(2)]
            p = 1 / (1 + math.exp(-(sum(wi * oi for wi, oi in zip(w, o, strict=True)) + b)))
            if blocked is None:
                out["weights"].append([a[j] for j in range(len(K))])
                out["p_with"].append(p)
            else:
                out["p_without"].append(p)
    return out


def variant(seed, **params):
    """The first draw of ``seed``, before the variant check."""
    kind = get_kind("ablation")
    normalized = kind.normalize_params({**params, "seed": seed})
    return kind.generate(normalized, np.random.default_rng(seed))


def offered(seed, **params):
    """The variant an exercise created with ``seed`` gets: the first draw the check keeps."""
    kind = get_kind("ablation")
    return draw_variant(kind, kind.normalize_params({**params, "seed": seed}), seed)


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
        ([0.12, -0.3, 0.08], "mixed"),  # large but in both directions
        ([-0.380, -0.101, 0.760], "mixed"),  # an older rule called these the small verdict
        ([0.408, -0.231, 0.773], "mixed"),
        ([0.12, 0.01, 0.08], "mixed"),  # large somewhere, not everywhere
        ([0.01, -0.02, 0.0], "redundant"),  # small everywhere
        ([0.0, 0.0, 0.0], "redundant"),
    ],
)
def test_the_lessons_rule_with_three_outcomes(change, expected):
    assert ablation.verdict(np.asarray(change)) == expected


def test_all_three_verdicts_occur_and_never_near_the_threshold():
    verdicts = []
    for seed in SEEDS:
        g = variant(seed)
        verdicts.append(g.solution["verdict"])
        change = np.abs(g.solution["change"])
        # Never within hand-rounding of the threshold.
        assert not ((change > ablation.SMALL) & (change < ablation.LARGE)).any()
    for outcome in ("reliance", "mixed", "redundant"):
        assert 12 <= verdicts.count(outcome) <= 30, verdicts


def _margins(g):
    """Per input, the highlighted weight minus the largest other weight (by hand)."""
    h = g.inputs["highlighted"]
    return [row[h] - max(v for j, v in enumerate(row) if j != h) for row in g.solution["weights"]]


@pytest.mark.parametrize("params", [{}, {"case": "redundant"}, {"n": 5, "n_inputs": 5}])
def test_the_highest_weight_is_strictly_highest_by_a_visible_margin_in_every_input(params):
    sold_as_highest = 0
    for seed in range(200):
        g = variant(seed, **params)
        if g.solution["verdict"] == "reliance":
            # Somewhere another token visibly has more weight, so weight alone misleads.
            assert min(_margins(g)) <= -ablation.MARGIN
            continue
        sold_as_highest += 1
        assert min(_margins(g)) >= 0.05, (seed, g.solution["weights"])
        if g.solution["verdict"] == "redundant":
            assert max(abs(c) for c in g.solution["change"]) <= 0.02
    assert sold_as_highest >= 100


def test_the_tied_decoration_variant_no_longer_ties():
    # {case: redundant} seed 2 gave the highlighted token 0.472 beside another 0.472.
    g = variant(2, case="redundant")
    assert min(_margins(g)) >= 0.05


@pytest.mark.parametrize("case", ["reliance", "mixed", "redundant"])
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
        assert g.asks[-1]["choices"] == ["reliance", "mixed", "redundant"]


def test_same_seed_same_variant_and_the_prompt_states_the_rule():
    a, b = variant(11), variant(11)
    assert a.inputs == b.inputs and a.solution == b.solution
    prompt = " ".join(a.prompt.split())
    assert "masking it as a key" in prompt and "not of causation" in prompt
    assert "one-head, one-layer model" in prompt
    # Which threshold is whose: the lesson's "large and consistent", the service's number.
    assert "**large and consistent**" in prompt
    assert f"at least {ablation.THRESHOLD}, is this exercise's choice, not the lesson's" in prompt
    for outcome in ("**reliance**", "**mixed**", "**redundant**"):
        assert outcome in prompt


def test_the_prompt_counts_tokens_from_one_as_the_tables_do():
    for seed in range(20):
        g = variant(seed, n=4)
        prompt = " ".join(g.prompt.split())
        h = g.inputs["highlighted"]
        assert f"highlights **token {h + 1}**" in prompt
        assert f"with token {h + 1} removed, which in this one-head, one-layer model" in prompt
        assert "final [CLS] token (token 4)" in prompt
        assert "tokens 1 to 4" in prompt
        assert "token 0" not in prompt


def _check(g, answers):
    return check_answers(
        asks=g.asks,
        solution=g.solution,
        answers=answers,
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=get_kind("ablation"),
    )


def _trap():
    for seed in SEEDS:
        g = variant(seed, case="redundant")
        w = np.asarray(g.solution["weights"])
        if (w.argmax(axis=1) == g.inputs["highlighted"]).all():
            return g
    raise AssertionError("no high-weight redundant variant drawn")


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
        "verdict": "redundant",
    }
    checked = _check(g, answers)
    # Only the first wrong step is diagnosed; the change follows from those probabilities.
    codes = {d["code"]: d["parts"] for d in checked.diagnosis}
    assert codes["ablation_masked_query"] == ["p_without"]
    assert checked.first_wrong == "p_without"
    assert "as a query" in checked.diagnosis[0]["text"]
    assert checked.parts["change"].follows and not checked.parts["change"].correct


def _first(case, accept=lambda g: True, **params):
    for seed in SEEDS:
        g = variant(seed, case=case, **params)
        if accept(g):
            return g
    raise AssertionError(f"no {case} variant drawn")


def test_decoration_on_a_reliance_variant_is_diagnosed_as_what_it_is():
    g = _first("reliance")
    checked = _check(g, {**g.solution, "verdict": "redundant"})
    assert not checked.correct and checked.first_wrong == "verdict"
    codes = [d["code"] for d in checked.diagnosis]
    assert codes == ["low_weight_as_decoration"]
    assert "high_weight_as_reliance" not in checked.parts["verdict"].diagnosis
    text = checked.diagnosis[0]["text"]
    assert "a lower weight is no evidence" in text
    assert "The lesson's test is large and consistent, and here both halves hold" in text


def test_mixed_directions_called_decoration_is_diagnosed():
    g = _first("mixed")
    checked = _check(g, {**g.solution, "verdict": "redundant"})
    assert [d["code"] for d in checked.diagnosis] == ["mixed_as_decoration"]
    assert "the prediction depends on the token" in checked.diagnosis[0]["text"]
    assert "evidence of reliance" not in checked.diagnosis[0]["text"]
    # Reliance there is the high-weight mistake: the token leads every input.
    checked = _check(g, {**g.solution, "verdict": "reliance"})
    assert [d["code"] for d in checked.diagnosis] == ["high_weight_as_reliance"]
    assert "here the consistent half fails" in checked.diagnosis[0]["text"]


def test_the_lesson_applied_literally_to_a_mixed_case_hears_which_half_failed():
    """The lesson's rule is binary: not large and consistent is "redundant: do not present
    it as why". On a mixed case that answer is told the lesson's test, in its words, and
    that the consistent half failed; never the service's own definition of redundant."""
    for seed in range(30):
        g = variant(seed, case="mixed")
        checked = _check(g, {**g.solution, "verdict": "redundant"})
        assert checked.first_wrong == "verdict"
        (entry,) = checked.diagnosis
        text = entry["text"]
        assert "The lesson's test is large and consistent" in text
        assert "here the consistent half fails" in text
        assert "so on those inputs the prediction depends on the token" in text
        assert "not one consistent reason" in text


def test_the_high_weight_taken_as_reliance_hears_which_half_failed():
    g = _trap()  # redundant: no change is large
    text = _check(g, {**g.solution, "verdict": "reliance"}).diagnosis[0]["text"]
    assert "a high weight is no evidence" in text
    assert "here the large half fails" in text and "consistent half fails" not in text


@pytest.mark.parametrize(
    "change, half",
    [
        ([0.2, 0.3, 0.1], "both halves hold"),
        ([0.2, -0.3, 0.1], "the consistent half fails"),
        ([0.2, 0.01, 0.1], "the consistent half fails"),
        ([0.01, -0.02, 0.0], "the large half fails"),
    ],
)
def test_the_lessons_test_words_name_the_half_that_fails(change, half):
    words = ablation.lesson_test_words(np.array(change))
    assert words.startswith("The lesson's test is large and consistent") and half in words
    assert words.endswith(f"{ablation.verdict(np.array(change))}.")


def test_the_prompt_says_why_there_is_a_third_outcome_in_the_lessons_words():
    prompt = " ".join(variant(0).prompt.split())
    assert "**mixed**: some change is large, so on those inputs the prediction depends" in prompt
    assert "**redundant**: no change is large" in prompt
    assert "removing one token at a time cannot see that" in prompt
    assert variant(0).asks[-1]["question"].startswith("Is the change large and consistent?")


def test_mixed_on_a_decoration_variant_names_no_weight_mistake():
    g = _trap()
    checked = _check(g, {**g.solution, "verdict": "mixed"})
    assert not checked.correct and checked.diagnosis == []


# --- The change judged on its own size ------------------------------------------------------


def _wrong_answers(inputs, **how):
    """Every part by a wrong method, each later part following from the earlier ones."""
    ref = reference(inputs, **how)
    change = (np.asarray(ref["p_without"]) - np.asarray(ref["p_with"])).tolist()
    return {**ref, "change": change, "verdict": ablation.verdict(np.asarray(change))}


def test_a_change_from_probabilities_inside_their_tolerance_is_still_judged_on_its_own_size():
    g = variant(5)
    tol = lambda p: 0.9 * (g.atol + g.rtol * abs(p))  # noqa: E731
    p_with = [p + tol(p) for p in g.solution["p_with"]]
    p_without = [p - tol(p) for p in g.solution["p_without"]]
    change = [a - b for a, b in zip(p_without, p_with, strict=True)]
    checked = _check(g, {**g.solution, "p_with": p_with, "p_without": p_without, "change": change})
    assert checked.parts["p_with"].correct and checked.parts["p_without"].correct
    # Off by nearly twice a probability's tolerance: far outside the change's own. It
    # follows from those probabilities, which earns half credit, never a right answer.
    assert not checked.parts["change"].correct and checked.parts["change"].follows
    assert checked.parts["change"].credit == 0.5 and not checked.correct


def test_probabilities_rounded_to_three_decimals_still_give_a_right_change():
    for seed in range(20):
        g = variant(seed)
        p_with = np.round(g.solution["p_with"], 3)
        p_without = np.round(g.solution["p_without"], 3)
        answers = {
            **g.solution,
            "p_with": p_with.tolist(),
            "p_without": p_without.tolist(),
            "change": np.round(p_without - p_with, 3).tolist(),
        }
        assert _check(g, answers).correct


def test_a_change_from_wrong_probabilities_follows_from_them():
    g = variant(3, case="reliance")
    p_with = [p + 0.1 for p in g.solution["p_with"]]
    change = [a - b for a, b in zip(g.solution["p_without"], p_with, strict=True)]
    checked = _check(g, {**g.solution, "p_with": p_with, "change": change})
    assert checked.parts["change"].follows and checked.first_wrong == "p_with"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "seed", "how"),
    [
        ({}, 0, {"scale": False}),
        ({}, 126960, {"scale": False}),
        ({"n_inputs": 4, "n": 3, "case": "redundant"}, 7920, {"scale": False}),
        ({"n_inputs": 2, "n": 3, "case": "reliance"}, 119010, {"renormalise": False}),
    ],
)
def test_the_wrong_methods_once_accepted_are_refused(api, params, seed, how):
    """Missing 1/sqrt(d_k), or the token zeroed after the softmax without renormalising."""
    r = api.post(EXERCISES, {"kind": "ablation", "params": {**params, "seed": seed}}, format="json")
    assert r.status_code == 201, r.content
    ex = r.json()
    wrong = _wrong_answers(ex["inputs"], **how)
    result = api.post(f"{EXERCISES}{ex['id']}/submit/", {"answers": wrong}, format="json")
    assert result.status_code == 200, result.content
    assert result.json()["correct"] is False


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "seed", "how"),
    [
        ({}, 0, {"scale": False}),
        ({}, 126960, {"scale": False}),
        ({"n_inputs": 4, "n": 3, "case": "redundant"}, 7920, {"scale": False}),
        ({"n_inputs": 2, "n": 3, "case": "reliance"}, 119010, {"renormalise": False}),
    ],
)
def test_the_wrong_methods_written_to_three_decimals_are_refused(api, params, seed, how):
    """The same wrong methods with every part written to three decimals, the change the
    difference of the written probabilities: the hand slack does not let them in."""
    r = api.post(EXERCISES, {"kind": "ablation", "params": {**params, "seed": seed}}, format="json")
    ex = r.json()
    wrong = _wrong_answers(ex["inputs"], **how)
    for part in ("weights", "p_with", "p_without"):
        wrong[part] = np.round(wrong[part], 3).tolist()
    wrong["change"] = np.round(np.subtract(wrong["p_without"], wrong["p_with"]), 3).tolist()
    result = api.post(f"{EXERCISES}{ex['id']}/submit/", {"answers": wrong}, format="json")
    assert result.status_code == 200, result.content
    assert result.json()["correct"] is False


# --- Hand work, as the prompt's rounding rule allows ---------------------------------------


HAND_PARAMS = [
    {"n_inputs": 3, "n": 3, "case": "reliance"},
    {"n_inputs": 5, "n": 5},
    {"n_inputs": 2, "n": 4, "case": "redundant"},
    {"n_inputs": 4, "n": 3, "case": "mixed"},
]


@pytest.mark.parametrize("params", HAND_PARAMS)
def test_the_hand_slack_bounds_what_the_hand_solver_writes(params):
    """Every step written to three decimals (tests/exercises/hand_solver.py, written from
    the prompt) lands within the bound the marking widens each part by."""
    for seed in range(40):
        g = variant(seed, **params)
        hand = hand_answers("ablation", g.inputs, g.prompt)
        carried = ablation.hand_slack(g.inputs)
        off = {
            part: np.abs(np.subtract(hand[part], g.solution[part]))
            for part in ("weights", "p_with", "p_without", "change")
        }
        assert (off["weights"] <= carried["weights"] + HALF_UNIT + 1e-12).all(), seed
        for part in ("p_with", "p_without"):
            assert (off[part] <= carried[part] + 1e-12).all(), (seed, part)
        assert (off["change"] <= carried["p_with"] + carried["p_without"] + 1e-12).all()


def test_the_hand_work_that_masking_moves_most_is_accepted():
    # Masked, the [CLS] row's scores are -4.243 and -5.657: e^s written as 0.014 and
    # 0.003 give weights 0.824 and 0.176 for 0.804 and 0.196, p_without 0.293 for 0.273.
    g = offered(124, n_inputs=3, n=3, case="reliance")
    hand = hand_answers("ablation", g.inputs, g.prompt)
    assert abs(hand["p_without"][0] - g.solution["p_without"][0]) > 0.015
    checked = _check(g, hand)
    assert checked.correct, checked.as_dict()
    assert checked.score == 1.0


def test_a_draw_where_the_hand_slack_would_let_a_mistake_in_is_not_offered():
    kind = get_kind("ablation")
    first = variant(4)
    # Decoration changes of 0.0001 to 0.0084 without 1/sqrt(d_k): inside the change's
    # tolerance once it is widened by what the written probabilities carry.
    no_scale = kind.answers_under(first.inputs, MISTAKES["no_scale"].recipe)
    assert accepted(kind, first, no_scale)
    assert variant_problems(kind, first) == ["no_scale is accepted"]
    g = offered(4)
    assert g.inputs != first.inputs
    for code in kind.mistakes:
        for decimals in (None, 3):
            answers = kind.answers_under(g.inputs, MISTAKES[code].recipe, decimals)
            assert answers is None or not accepted(kind, g, answers), (code, decimals)
    assert accepted(kind, g, hand_answers("ablation", g.inputs, g.prompt))


def test_a_variant_whose_hand_softmax_cannot_be_done_is_not_offered():
    kind = get_kind("ablation")
    g = variant(0)
    q = np.asarray(g.inputs["q"])
    # Every key far against the query: every e^s of the row is 0.000 at three decimals.
    g.inputs["K_1"] = [(-5 * np.sign(q)).tolist()] * len(g.inputs["K_1"])
    assert kind.degenerate(g) == "the exponentials of a row all but vanish at three decimals"
    assert kind.degenerate(variant(0)) is None


def test_the_prompt_says_the_change_tolerance_carries_the_written_probabilities():
    prompt = " ".join(variant(0).prompt.split())
    assert (
        "within 0.005 + 1% of the true change, widened by what your probabilities written "
        "to three decimals carry" in prompt
    )


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
        "label": "verdict",
        "shape": [],
        "choices": ["reliance", "mixed", "redundant"],
        "question": (
            "Is the change large and consistent? Both (reliance), large but not consistent "
            "(mixed), or not large (redundant)?"
        ),
    }
    assert ex["prediction"] is None  # the verdict is a part, answered with the numbers
    g = offered(4)
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
    assert 'type="radio" name="answer-verdict" value="mixed"' in html
    assert 'type="radio" name="answer-verdict" value="redundant"' in html
    g = offered(8)
    cells = {}
    for part in ("p_with", "p_without", "change"):
        cells.update({cell_name(part, (i,)): f"{v:.5f}" for i, v in enumerate(g.solution[part])})
    for i, row in enumerate(g.solution["weights"]):
        cells.update({cell_name("weights", (i, j)): f"{v:.5f}" for j, v in enumerate(row)})
    r = client.post(f"/exercises/{ex['id']}/submit/", cells)
    assert (
        r.status_code == 400
        and "verdict: choose one of reliance, mixed, redundant" in r.content.decode()
    )
    r = client.post(
        f"/exercises/{ex['id']}/submit/", {**cells, "answer-verdict": g.solution["verdict"]}
    )
    assert r.status_code == 302
    html = client.get(f"/exercises/{ex['id']}/").content.decode()
    assert "Correct!" in html
    assert f'value="{g.solution["verdict"]}" checked' in html
    # The heat map counts tokens from 1, as the prompt and the input tables do.
    n = len(g.solution["weights"][0])
    assert f'<th scope="col">token {n}</th>' in html
    assert '<th scope="col">token 0</th>' not in html


def test_the_starter_deck_has_the_ablation_card_last_of_its_exercises():
    path = (
        Path(__file__).resolve().parents[3]
        / "cards"
        / "content"
        / "attention-and-transformers.yaml"
    )
    doc = yaml.safe_load(path.read_text())
    # The lesson's lab comes after it, as lab cards.
    exercises = [c for c in doc["cards"] if c["kind"] == "exercise"]
    last = exercises[-1]
    assert last["key"] == "ablation-reliance-test"
    assert doc["cards"].index(last) < [c["kind"] for c in doc["cards"]].index("lab")
    assert last["exercise"]["kind"] == "ablation"
    get_kind("ablation").normalize_params(last["exercise"]["params"])
    by_key = {c["key"]: c for c in doc["cards"]}
    # The causal-mask card's prediction has an answer that varies with the variant.
    causal = by_key["exercise-causal-mask"]["exercise"]
    kind = get_kind(causal["kind"])
    answers = {
        draw_variant(kind, kind.normalize_params(causal["params"]), seed).solution["prediction"]
        for seed in range(12)
    }
    assert len(answers) > 1, answers
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
