"""The playground's computation on its own (no database, no request)."""

from __future__ import annotations

import numpy as np
import pytest

from exercises import engine
from exercises.playground import (
    PlaygroundError,
    as_matrices,
    attention_playground,
    preset_playground,
    scores_caption,
)
from exercises.presets import PRESETS

LESSON = as_matrices(PRESETS["bag"]["matrices"])


def test_projected_inputs_show_every_intermediate_as_plain_json():
    out = attention_playground(**LESSON)
    Q, K, V = engine.project(LESSON["X"], LESSON["W_Q"], LESSON["W_K"], LESSON["W_V"])
    trace = engine.scaled_dot_product_attention(Q, K, V, return_intermediates=True)
    assert out["X"] == LESSON["X"].tolist() and out["Q"] == Q.tolist()
    np.testing.assert_allclose(out["weights"], trace.weights)
    np.testing.assert_allclose(out["output"], trace.output)
    assert out["mask"] == np.zeros((3, 3), dtype=bool).tolist() and out["scale"] is True
    assert out["shapes"]["W_V"] == [3, 2] and out["shapes"]["weights"] == [3, 3]


def test_direct_inputs_carry_no_projection():
    Q, K, V = (np.array(m, dtype=float) for m in PRESETS["abc"]["matrices"].values())
    out = attention_playground(Q=Q, K=K, V=V, mask="causal", scale=False)
    assert "X" not in out and "X" not in out["shapes"]
    assert out["mask"] == engine.causal_mask(3).tolist()
    # Scores are shown before the mask, unscaled here.
    np.testing.assert_allclose(out["scores"], Q @ K.T)
    assert out["weights"][0] == [1.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("inputs", "field", "words"),
    [
        ({**LESSON, "W_K": np.ones((2, 2))}, "W_K", "Expected 3 rows"),
        ({**LESSON, "W_K": np.ones((3, 3))}, "W_K", "Expected 2 columns like W_Q"),
        ({"Q": np.ones((2, 2)), "K": np.ones((2, 3)), "V": np.ones((2, 1))}, "K", "columns"),
        (
            {"Q": np.ones((2, 2)), "K": np.ones((2, 2)), "V": np.ones((3, 1))},
            "V",
            "Expected 2 rows",
        ),
        ({**LESSON, "mask": np.ones((2, 3), dtype=bool)}, "mask", "3×3 boolean matrix"),
        ({**LESSON, "mask": np.ones((3, 3), dtype=bool)}, "mask", "Every key is blocked"),
        ({"X": np.eye(2)}, "non_field_errors", "Give either"),
    ],
)
def test_inputs_that_make_no_head_name_the_field(inputs, field, words):
    with pytest.raises(PlaygroundError) as caught:
        attention_playground(**inputs)
    assert field in caught.value.errors and words in caught.value.errors[field][0]


def test_errors_read_as_lines_led_by_their_field():
    error = PlaygroundError({"K": ["too wide"], "non_field_errors": ["give both"]})
    assert error.lines() == ["K: too wide", "give both"]


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_computes_as_its_own_matrices_do(name):
    preset = PRESETS[name]
    expected = attention_playground(
        **as_matrices(preset["matrices"]),
        mask="causal" if preset["causal"] else "none",
        scale=preset["scale"],
    )
    assert preset_playground(name) == expected


def test_the_scores_caption_says_whether_they_are_scaled():
    assert "√dₖ" in scores_caption(True) and "unscaled" in scores_caption(False)
