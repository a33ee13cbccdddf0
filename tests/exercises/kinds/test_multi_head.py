"""The multi_head kind: heads over column slices, concatenated, through W_O
(exercises/kinds/multi_head.py)."""

import numpy as np

from tests.exercises import hand_solver as hs
from tests.exercises.kind_cases import KindCases

CASES = {
    "multi_head": KindCases(
        solver=hs.multi_head,
        example={"n": 3, "heads": 2, "d_head": 2, "mask": "causal"},
        largest=({"n": 8, "heads": 4, "d_head": 4, "mask": "causal"},),
    ),
}


def test_multi_head_parts_per_head_and_engine_agrees_with_a_loop(generate):
    _, g = generate("multi_head", heads=3, d_head=2, n=4)
    assert [a["name"] for a in g.asks] == [
        "weights_head_0",
        "weights_head_1",
        "weights_head_2",
        "output",
    ]
    X, Wq, Wk, Wv, Wo = (
        np.array(g.inputs[k], dtype=float) for k in ("X", "W_Q", "W_K", "W_V", "W_O")
    )
    heads = []
    for h in range(3):
        c = slice(2 * h, 2 * h + 2)
        s = (X @ Wq[:, c]) @ (X @ Wk[:, c]).T / np.sqrt(2)
        a = np.exp(s - s.max(1, keepdims=True))
        a /= a.sum(1, keepdims=True)
        np.testing.assert_allclose(g.solution[f"weights_head_{h}"], a, atol=1e-11)
        heads.append(a @ (X @ Wv[:, c]))
    np.testing.assert_allclose(g.solution["output"], np.concatenate(heads, 1) @ Wo, atol=1e-11)
