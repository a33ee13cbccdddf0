import math

import numpy as np
import pytest

from exercises.checking import MISTAKES, AnswerError, check_answers
from exercises.kinds import KINDS

ASKS = [{"name": "m", "shape": [2, 2]}, {"name": "v", "shape": [3]}, {"name": "x", "shape": []}]
SOLUTION = {"m": [[1.0, -2.0], [0.5, 0.0]], "v": [0.25, 0.5, 0.25], "x": 100.0}


def check(answers, rtol=0.01, atol=0.005, **kw):
    return check_answers(asks=ASKS, solution=SOLUTION, answers=answers, rtol=rtol, atol=atol, **kw)


def test_exact_answers_are_correct_with_full_score():
    r = check(SOLUTION)
    assert r.correct and r.score == 1.0 and r.diagnosis == []
    assert all(p.wrong_cells == [] and p.message == "Correct." for p in r.parts.values())


def test_tolerance_is_atol_plus_rtol_times_expected():
    # x = 100: allowed |error| <= 0.005 + 0.01 * 100 = 1.005
    assert check({**SOLUTION, "x": 101.0}).parts["x"].correct
    assert not check({**SOLUTION, "x": 101.01}).parts["x"].correct
    assert check({**SOLUTION, "x": 98.996}).parts["x"].correct
    # 0 expected: only atol counts.
    m = [[1.0, -2.0], [0.5, 0.005]]
    assert check({**SOLUTION, "m": m}).parts["m"].correct
    m = [[1.0, -2.0], [0.5, 0.0051]]
    assert not check({**SOLUTION, "m": m}).parts["m"].correct


def test_three_decimal_hand_work_is_accepted():
    weights = [[0.401, 0.401, 0.198]]
    exact = np.exp([1 / math.sqrt(2), 1 / math.sqrt(2), 0])
    exact = (exact / exact.sum()).tolist()
    r = check_answers(
        asks=[{"name": "w", "shape": [1, 3]}],
        solution={"w": [exact]},
        answers={"w": weights},
        rtol=0.01,
        atol=0.005,
    )
    assert r.correct


def test_wrong_cells_format_and_partial_credit():
    r = check({"m": [[1.0, 2.0], [0.5, 9.0]], "v": [0.25, 0.0, 0.25], "x": 1.0})
    assert not r.correct
    assert r.parts["m"].wrong_cells == [[0, 1], [1, 1]]
    assert r.parts["v"].wrong_cells == [[1]]
    assert r.parts["x"].wrong_cells == [[]]
    assert r.parts["m"].message.startswith("2 of 4 entries")
    assert r.score == pytest.approx(round((2 / 4 + 2 / 3 + 0) / 3, 4))
    assert r.as_dict()["parts"]["x"] == {
        "correct": False,
        "wrong_cells": [[]],
        "message": "Not within the tolerance of the expected value.",
    }


def test_integers_are_numbers():
    r = check({"m": [[1, -2], [0.5, 0]], "v": [0.25, 0.5, 0.25], "x": 100})
    assert r.correct


@pytest.mark.parametrize(
    "part, value, words",
    [
        ("x", float("nan"), "finite"),
        ("x", float("inf"), "finite"),
        ("x", "100", "string"),
        ("x", True, "boolean"),
        ("x", None, "null"),
        ("x", [100.0], "a number (shape [])"),
        ("v", [0.25, 0.5], "shape [3]"),
        ("v", [0.25, "0.5", 0.25], "entry [1]"),
        ("v", [0.25, False, 0.25], "boolean"),
        ("m", [[1.0, -2.0]], "shape [2, 2]"),
        ("m", [[1.0, -2.0], [0.5]], "row 1"),
        ("m", [[1.0, -2.0], [0.5, float("-inf")]], "entry [1, 1]"),
        ("m", [1.0, -2.0], "row 0"),
        ("m", {"a": 1}, "an object"),
        ("x", 10**400, "too large"),
    ],
)
def test_malformed_parts_name_the_part_and_the_expected_shape(part, value, words):
    with pytest.raises(AnswerError) as err:
        check({**SOLUTION, part: value})
    assert list(err.value.errors) == [part]
    message = err.value.errors[part]
    assert words in message
    shape = next(a["shape"] for a in ASKS if a["name"] == part)
    assert f"shape {shape}" in message


def test_missing_and_unknown_parts_are_reported_together():
    with pytest.raises(AnswerError) as err:
        check({"m": SOLUTION["m"], "v": SOLUTION["v"], "y": 1})
    assert set(err.value.errors) == {"x", "y"}
    assert "Missing" in err.value.errors["x"] and "shape []" in err.value.errors["x"]
    assert "Unknown part 'y'" in err.value.errors["y"]


def test_answers_must_be_an_object():
    with pytest.raises(AnswerError) as err:
        check([1, 2])
    assert "answers" in err.value.errors


def test_a_transposed_matrix_gets_a_hint():
    asks = [{"name": "out", "shape": [3, 2]}]
    with pytest.raises(AnswerError) as err:
        check_answers(
            asks=asks,
            solution={"out": [[0] * 2] * 3},
            answers={"out": [[0] * 3] * 2},
            rtol=0.01,
            atol=0.005,
        )
    assert "transposed" in err.value.errors["out"]


# --- Diagnosis -------------------------------------------------------------------------

# (code, kind, params) where the mistake changes the answer for a default-sized variant.
DIAGNOSES = [
    ("no_scale", "attention", {}),
    ("no_mask", "attention", {"mask": "causal"}),
    ("mask_after_softmax", "causal", {}),
    ("mask_as_zero_score", "attention", {"mask": "padding", "n": 4}),
    ("softmax_over_queries", "attention", {}),
    ("scores_transposed", "attention", {}),
    ("k_not_transposed", "attention", {"n": 2}),
    ("weights_transposed_in_output", "attention", {}),
    ("scale_by_d_model", "multi_head", {}),
    ("d_model_for_d_k", "shapes", {}),
    ("pe_concatenated", "positional_encoding", {}),
    ("pe_sin_cos_swapped", "positional_encoding", {}),
    ("sd_for_variance", "scaling", {}),
    ("divided_by_d_k", "scaling", {}),
    ("scale_swapped", "scaling", {}),
    ("bytes_one_head", "cost", {}),
    ("share_qk_only", "cost", {}),
]


# Mistakes of kinds with a choice part (the ablation verdict), tested in test_ablation.py.
CHOICE_KIND_DIAGNOSES = {"high_weight_as_reliance", "ablation_masked_query"}


def test_every_mistake_is_declared_by_some_kind_and_tested():
    declared = {code for kind in KINDS.values() for code in kind.mistakes}
    tested = {code for code, _, _ in DIAGNOSES} | CHOICE_KIND_DIAGNOSES
    assert declared == set(MISTAKES) == tested


def _distinct_variant(generate, code, kind_name, params):
    """A seed whose mistaken answer differs from the right one beyond tolerance."""
    for seed in range(50):
        kind, g = generate(kind_name, seed=seed, **params)
        variant = kind.answers_under(g.inputs, MISTAKES[code].recipe)
        if not variant:
            continue
        wrong = {}
        for part, alt in variant.items():
            if part not in g.solution:
                continue
            expected = np.asarray(g.solution[part], dtype=float)
            if np.isfinite(alt).all() and not np.allclose(
                alt, expected, rtol=g.rtol, atol=g.atol + 1e-9
            ):
                wrong[part] = np.asarray(alt).tolist()
        if wrong:
            return kind, g, wrong
    raise AssertionError(f"no seed makes {code} visible for {kind_name}")


@pytest.mark.parametrize("code, kind_name, params", DIAGNOSES, ids=[d[0] for d in DIAGNOSES])
def test_diagnosis_fires_on_the_mistaken_answer(code, kind_name, params, generate):
    kind, g, wrong = _distinct_variant(generate, code, kind_name, params)
    answers = {**g.solution, **wrong}
    r = check_answers(
        asks=g.asks,
        solution=g.solution,
        answers=answers,
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=kind_name,
    )
    assert not r.correct
    found = {d["code"]: d for d in r.diagnosis}
    assert code in found
    assert set(found[code]["parts"]) == set(wrong)
    for part in wrong:
        assert MISTAKES[code].text in r.parts[part].message
        assert not r.parts[part].correct


@pytest.mark.parametrize("code, kind_name, params", DIAGNOSES, ids=[d[0] for d in DIAGNOSES])
def test_diagnosis_stays_silent_on_the_right_answer_and_on_noise(code, kind_name, params, generate):
    kind, g, wrong = _distinct_variant(generate, code, kind_name, params)
    right = check_answers(
        asks=g.asks,
        solution=g.solution,
        answers=g.solution,
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=kind,
    )
    assert right.correct and right.diagnosis == []
    # A wrong answer that matches no known mistake: every cell tripled plus 7.
    noise = {
        a["name"]: (np.asarray(g.solution[a["name"]], dtype=float) * 3 + 7).tolist() for a in g.asks
    }
    r = check_answers(
        asks=g.asks,
        solution=g.solution,
        answers=noise,
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=kind,
    )
    assert r.diagnosis == [] and r.score == 0


def test_renormalising_after_the_softmax_is_the_right_answer(generate):
    # Zeroing blocked weights and renormalising equals masking the scores first.
    kind, g = generate("causal", n=4)
    scores = np.array(g.inputs["Q"]) @ np.array(g.inputs["K"]).T / np.sqrt(2)
    w = np.exp(scores - scores.max(1, keepdims=True))
    w = np.where(np.array(g.inputs["mask"]), 0, w)
    w /= w.sum(1, keepdims=True)
    r = check_answers(
        asks=g.asks,
        solution=g.solution,
        answers={"weights": w.tolist()},
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=kind,
    )
    assert r.correct


def test_a_carried_error_in_the_output_is_diagnosed_too(generate):
    kind, g = generate("attention", seed=3)
    variant = kind.answers_under(g.inputs, MISTAKES["no_scale"].recipe)
    answers = {
        "scores": g.solution["scores"],
        "weights": variant["weights"].tolist(),
        "output": variant["output"].tolist(),
    }
    r = check_answers(
        asks=g.asks,
        solution=g.solution,
        answers=answers,
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=kind,
    )
    assert r.parts["scores"].correct
    assert [d["parts"] for d in r.diagnosis if d["code"] == "no_scale"] == [["weights", "output"]]
