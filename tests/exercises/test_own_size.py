"""A part that is a difference of earlier parts is judged on a tolerance that fits its own
size: earlier parts right only within their tolerance do not carry it far off.

``Gap`` is a small kind of this test's own (not registered): a = 2x, b = 2y and the gap
b - a, which the kind computes from the learner's a and b with ``Follow(own_size=True)``.
"""

from typing import Any, ClassVar

import numpy as np
import pytest

from exercises.checking import MISTAKES, check_answers
from exercises.kinds import get_kind
from exercises.kinds.base import HALF_UNIT, ExerciseKind, Follow, Generated, ParamSpec
from exercises.variants import close_input_problems, draw_variant, variant_problems

ASKS = [{"name": "a", "shape": []}, {"name": "b", "shape": []}, {"name": "gap", "shape": []}]


class Gap(ExerciseKind):
    name = "gap"
    title = "A difference of two parts"
    description = "a = 2x, b = 2y and the gap b - a."
    params: ClassVar[dict[str, ParamSpec]] = {}

    def answers_under(self, inputs, recipe, decimals=None):
        if recipe:
            return None
        a, b = 2 * inputs["x"], 2 * inputs["y"]
        return {"a": np.asarray(a), "b": np.asarray(b), "gap": np.asarray(b - a)}

    def follow_on(self, inputs, given, recipe=None) -> dict[str, Follow]:
        a, b = float(given["a"]), float(given["b"]) if "b" in given else 0.0
        if inputs.get("vanish") and a != 2 * inputs["x"]:
            return {}  # nothing follows from a moved a
        return {
            # Computed from the inputs: own size or not, there is nothing to carry it.
            "a": Follow(np.asarray(2 * inputs["x"]), (), "the inputs", own_size=True),
            "gap": Follow(
                np.asarray(b - a),
                ("a", "b"),
                "your a and b",
                slack=2 * HALF_UNIT,  # a and b written to three decimals
                own_size=(
                    a == 2 * inputs["x"] and b == 2 * inputs["y"]
                    if inputs.get("own_size") == "at the answer only"
                    else inputs.get("own_size", True)
                ),
            ),
        }


def generated(**inputs: Any) -> Generated:
    inputs = {"x": 1.0, "y": 1.01, **inputs}
    right = Gap().answers_under(inputs, {})
    return Generated(
        prompt="",
        inputs=inputs,
        asks=ASKS,
        solution={k: float(v) for k, v in right.items()},
    )


def mark(g: Generated, answers: dict[str, float]):
    return check_answers(
        asks=g.asks,
        solution=g.solution,
        answers=answers,
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=Gap(),
    )


def test_a_gap_that_follows_from_parts_right_only_within_tolerance_is_not_correct():
    g = generated()  # a = 2.0, b = 2.02: the gap is 0.02
    # Each part within 0.005 + 1% of its value, the gap from them 0.038 off: 190%.
    r = mark(g, {"a": 2.019, "b": 2.001, "gap": -0.018})
    assert r.parts["a"].correct and r.parts["b"].correct
    assert not r.correct and not r.parts["gap"].correct
    # It follows from the learner's own a and b: half credit, named.
    assert r.parts["gap"].follows and r.parts["gap"].follows_from == "your a and b"
    assert r.score == pytest.approx((1 + 1 + 0.5) / 3, abs=1e-4)


def test_a_gap_from_parts_written_to_three_decimals_is_accepted():
    g = generated(x=1.00049, y=1.01049)  # a = 2.00098, b = 2.02098
    r = mark(g, {"a": 2.001, "b": 2.021, "gap": 0.02})
    assert r.correct
    r = mark(g, {"a": 2.001, "b": 2.021, "gap": 0.026})  # within its own 0.005 + 1% + 0.001
    assert r.correct


def test_a_gap_that_neither_follows_nor_fits_is_wrong_without_credit():
    r = mark(generated(), {"a": 2.019, "b": 2.001, "gap": 0.3})
    assert not r.parts["gap"].correct and not r.parts["gap"].follows


def test_without_own_size_the_close_parts_would_carry_the_gap():
    # The behaviour a difference had before: accepted as following from right parts.
    r = mark(generated(own_size=False), {"a": 2.019, "b": 2.001, "gap": -0.018})
    assert r.correct


def test_the_variant_guarantee_probes_parts_moved_to_the_edge_of_their_tolerance():
    assert close_input_problems(Gap(), generated()) == []
    assert close_input_problems(Gap(), generated(vanish=True)) == []
    # A kind that judges the gap on its own size only at the expected a and b: with a and
    # b moved to the edges of their tolerance it carries the gap 150% off.
    g = generated(own_size="at the answer only")
    assert close_input_problems(Gap(), g) == [
        "a wrong gap is accepted because its inputs were close"
    ]
    assert "a wrong gap is accepted because its inputs were close" in variant_problems(Gap(), g)


# --- Diagnoses that name the mistake made ------------------------------------------------


def _scaling(seed=0):
    kind = get_kind("scaling")
    return kind, draw_variant(kind, kind.normalize_params({}), seed)


@pytest.mark.parametrize("seed", range(8))
def test_scaled_weights_left_unscaled_are_named_as_that_not_as_swapped(seed):
    kind, g = _scaling(seed)
    answers = {
        "variance": g.solution["variance"],
        "weights_scaled": g.solution["weights_unscaled"],  # the scale left out
        "weights_unscaled": g.solution["weights_unscaled"],  # right
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
    assert [d["code"] for d in r.diagnosis] == ["no_scale"]


@pytest.mark.parametrize("seed", range(8))
def test_both_rows_swapped_are_named_swapped(seed):
    kind, g = _scaling(seed)
    answers = kind.answers_under(g.inputs, MISTAKES["scale_swapped"].recipe)
    r = check_answers(
        asks=g.asks,
        solution=g.solution,
        answers={k: np.asarray(v).tolist() for k, v in answers.items()},
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=kind,
    )
    assert [d["code"] for d in r.diagnosis] == ["scale_swapped"]
