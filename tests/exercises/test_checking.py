import math

import numpy as np
import pytest

from exercises.checking import MISTAKES, AnswerError, check_answers
from exercises.kinds import KINDS, get_kind
from exercises.variants import draw_variant

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
        "follows": False,
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
        ("m", [[1.0, -2.0], [0.5]], "row [1]"),
        ("m", [[1.0, -2.0], [0.5, float("-inf")]], "entry [1, 1]"),
        ("m", [1.0, -2.0], "row [0]"),
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


# --- Diagnosis ---------------------------------------------------------------------------

# (code, kind, params) where the mistake applies.
DIAGNOSES = [
    ("no_scale", "attention", {}),
    ("divided_by_d_k", "attention", {"d_k": 4}),
    ("divided_by_d_k", "causal", {"d_k": 4}),
    ("divided_by_d_k", "scaling", {}),
    ("no_mask", "attention", {"mask": "causal"}),
    ("mask_after_softmax", "causal", {}),
    ("mask_as_zero_score", "attention", {"mask": "padding", "n": 4}),
    ("softmax_over_queries", "attention", {}),
    ("scores_transposed", "attention", {}),
    ("k_not_transposed", "attention", {"n": 2}),
    ("weights_transposed_in_output", "attention", {}),
    ("weights_transposed_in_output", "multi_head", {}),
    ("scale_by_d_model", "multi_head", {"heads": 4, "d_head": 2}),
    ("d_model_for_d_k", "shapes", {}),
    ("pe_concatenated", "positional_encoding", {}),
    ("pe_interleaved", "positional_encoding", {"layout": "sines_then_cosines"}),
    ("pe_sin_cos_swapped", "positional_encoding", {}),
    ("sd_for_variance", "scaling", {}),
    ("scale_swapped", "scaling", {}),
    ("bytes_one_head", "cost", {}),
    ("share_qk_only", "cost", {}),
    ("params_with_biases", "cost", {}),
    ("no_scale", "scaling", {}),
    ("causal_mask_transposed", "causal", {}),
    ("causal_mask_transposed", "attention", {"mask": "causal"}),
    ("causal_mask_transposed", "multi_head", {"mask": "causal"}),
    ("causal_mask_transposed", "projection", {"mask": "causal"}),
    ("padding_on_queries", "padding", {}),
    ("padding_on_queries", "attention", {"mask": "padding", "n": 4}),
    ("padded_rows_zeroed", "padding", {}),
    ("padded_rows_zeroed", "attention", {"mask": "padding", "n": 4}),
    ("heads_interleaved", "multi_head", {"heads": 2, "d_head": 2}),
    ("heads_interleaved", "multi_head", {"heads": 2, "d_head": 3, "n": 2, "mask": "causal"}),
    ("softmax_over_queries", "padding", {}),
    ("w_q_w_k_swapped", "projection", {}),
    ("sqrt_d_model_in_projection", "projection", {}),
    ("heads_concatenated_in_reverse", "multi_head", {}),
    ("w_o_left_out", "multi_head", {}),
    ("params_without_w_o", "cost", {}),
    ("ffn_one_matrix", "cost", {}),
    ("share_without_w_o", "cost", {}),
]
IDS = [f"{code}-{kind}" for code, kind, _ in DIAGNOSES]


# Mistakes of kinds with a choice part (the ablation verdict), tested in test_ablation.py.
CHOICE_KIND_DIAGNOSES = {
    "high_weight_as_reliance",
    "low_weight_as_decoration",
    "mixed_as_decoration",
    "ablation_masked_query",
}


def test_every_mistake_is_declared_by_some_kind_and_tested():
    declared = {code for kind in KINDS.values() for code in kind.mistakes}
    tested = {code for code, _, _ in DIAGNOSES} | CHOICE_KIND_DIAGNOSES
    assert declared == set(MISTAKES) == tested


def named_codes(diagnosis):
    """Every mistake a diagnosis names, those named together ("either ... or ...") too."""
    return [e["code"] for d in diagnosis for e in d.get("either", [d])]


def _as_json(answers):
    return {part: np.asarray(value).tolist() for part, value in answers.items()}


def _mistaken(code, kind_name, params, seeds=range(40)):
    """A variant (as offered) and the answers of a learner who makes ``code`` on it."""
    kind = get_kind(kind_name)
    normalized = kind.normalize_params(params)
    for seed in seeds:
        g = draw_variant(kind, normalized, seed)
        answers = kind.answers_under(g.inputs, MISTAKES[code].recipe)
        if answers is not None:
            return kind, g, _as_json(answers)
    raise AssertionError(f"{code} never applies to {kind_name} {params}")


def _check(kind, g, answers):
    return check_answers(
        asks=g.asks,
        solution=g.solution,
        answers=answers,
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=kind,
    )


@pytest.mark.parametrize("code, kind_name, params", DIAGNOSES, ids=IDS)
def test_the_mistake_is_named_once_at_the_first_wrong_step(code, kind_name, params):
    kind, g, answers = _mistaken(code, kind_name, params)
    r = _check(kind, g, answers)
    assert not r.correct
    step = r.first_wrong
    names = [a["name"] for a in g.asks]
    # Every part before the first wrong step is right.
    assert all(r.parts[name].correct for name in names[: names.index(step)])
    assert code in named_codes(r.diagnosis)
    assert all(d["parts"] == [step] for d in r.diagnosis)
    text = MISTAKES[code].text
    assert sum(p.message.count(text) for p in r.parts.values()) == 0  # once, in the diagnosis
    assert "first wrong step" in r.parts[step].message


@pytest.mark.parametrize("code, kind_name, params", DIAGNOSES, ids=IDS)
def test_diagnosis_stays_silent_on_the_right_answer_and_on_noise(code, kind_name, params):
    kind, g, _ = _mistaken(code, kind_name, params)
    right = _check(kind, g, g.solution)
    assert right.correct and right.diagnosis == [] and right.first_wrong is None
    # A wrong answer that matches no known mistake: every cell tripled plus 7.
    noise = {
        a["name"]: (np.asarray(g.solution[a["name"]], dtype=float) * 3 + 7)
        .astype(int if a.get("exact") else float)
        .tolist()
        for a in g.asks
    }
    r = _check(kind, g, noise)
    assert r.diagnosis == [] and not r.correct


def test_renormalising_after_the_softmax_is_the_right_answer(generate):
    # Zeroing blocked weights and renormalising equals masking the scores first.
    kind, g = generate("causal", n=4)
    scores = np.array(g.inputs["Q"]) @ np.array(g.inputs["K"]).T / np.sqrt(2)
    w = np.exp(scores - scores.max(1, keepdims=True))
    w = np.where(np.array(g.inputs["mask"]), 0, w)
    w /= w.sum(1, keepdims=True)
    assert _check(kind, g, {"weights": w.tolist()}).correct


@pytest.mark.parametrize("seed", range(12))
def test_right_weights_with_a_transposed_mix_are_never_told_softmax_down_the_columns(seed):
    kind = get_kind("multi_head")
    g = draw_variant(kind, kind.normalize_params({}), seed)
    answers = _as_json(
        kind.answers_under(g.inputs, MISTAKES["weights_transposed_in_output"].recipe)
    )
    r = _check(kind, g, answers)
    assert r.first_wrong == "output"
    assert [d["code"] for d in r.diagnosis] == ["weights_transposed_in_output"]
