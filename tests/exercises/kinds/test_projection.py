"""The projection kind: Q, K and V projected from X first (exercises/kinds/projection.py)."""

import numpy as np

from exercises.kinds import get_kind
from tests.exercises import hand_solver as hs
from tests.exercises.kind_cases import KindCases

CASES = {
    "projection": KindCases(
        solver=hs.projection,
        example={"preset": "lesson"},
        largest=(
            {"preset": "random", "n": 8, "d_model": 8, "d_k": 8, "x": "integers", "mask": "causal"},
        ),
    ),
}

LESSON_WEIGHTS = [[0.401, 0.401, 0.198], [0.198, 0.401, 0.401], [0.248, 0.503, 0.248]]
LESSON_OUTPUT = [[1.000, 1.000], [0.797, 1.203], [0.745, 1.255]]
LESSON_CAUSAL = [[1.0, 0.0, 0.0], [0.330, 0.670, 0.0], [0.248, 0.503, 0.248]]


def test_projection_lesson_preset_fixed_is_the_lessons_bag_delayed_refund(generate):
    _, g = generate("projection", vary=False)
    assert g.inputs["X"] == np.eye(3, dtype=int).tolist()
    assert g.inputs["W_Q"] == [[1, 0], [0, 1], [1, 1]]
    np.testing.assert_allclose(g.solution["weights"], LESSON_WEIGHTS, atol=5e-4)
    np.testing.assert_allclose(g.solution["output"], LESSON_OUTPUT, atol=5e-4)
    assert g.solution["Q"] == [[1, 0], [0, 1], [1, 1]]


def test_projection_lesson_with_causal_mask_matches_the_lesson_table(generate):
    _, g = generate("projection", mask="causal", vary=False)
    np.testing.assert_allclose(g.solution["weights"], LESSON_CAUSAL, atol=5e-4)


def test_projection_lesson_preset_records_its_fixed_sizes():
    params = get_kind("projection").normalize_params({"n": 6})
    assert (params["n"], params["d_model"], params["d_k"]) == (3, 3, 2)


def test_projection_random_one_hot_rows(generate):
    _, g = generate("projection", preset="random", n=5, d_model=4, d_k=3)
    X = np.array(g.inputs["X"])
    assert X.shape == (5, 4) and (X.sum(axis=1) == 1).all()
    assert [a["shape"] for a in g.asks][:3] == [[5, 3]] * 3


def test_projection_lesson_preset_varies_the_token_sequence_by_default(generate):
    sequences = set()
    for seed in range(40):
        _, g = generate("projection", seed=seed)
        assert g.inputs["W_Q"] == [[1, 0], [0, 1], [1, 1]]  # the lesson's hand-set projections
        X = np.array(g.inputs["X"])
        assert (X.sum(axis=1) == 1).all()
        tokens = g.inputs["tokens"]
        assert [("bag", "delayed", "refund")[i] for i in X.argmax(axis=1)] == tokens
        assert len(set(tokens)) >= 2
        assert " ".join(tokens) in g.prompt
        sequences.add(tuple(tokens))
    assert len(sequences) >= 10
