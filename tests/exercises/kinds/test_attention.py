"""The attention kind: one head on given Q, K and V (exercises/kinds/attention.py)."""

import numpy as np
import pytest

from exercises.kinds import get_kind
from tests.exercises import hand_solver as hs
from tests.exercises.kind_cases import KindCases

LARGEST = {"n": 8, "d_k": 8, "d_v": 8, "max_abs": 5}

CASES = {
    "attention": KindCases(
        solver=hs.attention,
        example={"n": 3, "d_k": 2, "d_v": 2, "mask": "causal"},
        largest=(
            {**LARGEST, "mask": "padding"},
            {**LARGEST, "mask": "causal"},
            {**LARGEST, "predict": "top_key"},
        ),
    ),
}

MASKS = [m for m in get_kind("attention").params["mask"].choices if m != "none"]


def test_default_attention_is_three_tokens_of_small_integers(generate):
    _, g = generate("attention")
    Q = np.array(g.inputs["Q"])
    assert Q.shape == (3, 2) and np.abs(Q).max() <= 2
    assert g.inputs["mask"] == [[False] * 3] * 3
    assert [a["shape"] for a in g.asks] == [[3, 3], [3, 3], [3, 2]]


def test_attention_solution_by_hand(generate):
    _, g = generate("attention", seed=11)
    Q, K, V = (np.array(g.inputs[k], dtype=float) for k in "QKV")
    s = Q @ K.T / np.sqrt(2)
    a = np.exp(s - s.max(1, keepdims=True))
    a /= a.sum(1, keepdims=True)
    np.testing.assert_allclose(g.solution["scores"], s)
    np.testing.assert_allclose(g.solution["weights"], a)
    np.testing.assert_allclose(g.solution["output"], a @ V)


def test_attention_without_scale_asks_for_raw_scores(generate):
    _, g = generate("attention", scale=False)
    Q, K = (np.array(g.inputs[k], dtype=float) for k in "QK")
    np.testing.assert_allclose(g.solution["scores"], Q @ K.T)
    assert g.inputs["scale"] is False


@pytest.mark.parametrize("mask", MASKS)
def test_attention_masks_are_in_the_inputs_and_zero_the_weights(mask, generate):
    _, g = generate("attention", mask=mask, n=5)
    blocked = np.array(g.inputs["mask"])
    assert blocked.any() and not blocked.all(axis=1).any()
    w = np.array(g.solution["weights"])
    assert (w[blocked] == 0).all()
    np.testing.assert_allclose(w.sum(axis=1), 1)
