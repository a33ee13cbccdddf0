"""The masked kinds, causal and padding: the weights alone, under a mask
(exercises/kinds/masked.py)."""

import numpy as np
import pytest

from exercises.checking import check_answers
from exercises.kinds import get_kind
from exercises.variants import draw_variant
from tests.exercises import hand_solver as hs
from tests.exercises.kind_cases import KindCases

CASES = {
    "causal": KindCases(
        solver=hs.masked_weights,
        example={"n": 3, "d_k": 2},
        largest=({"n": 8, "d_k": 8},),
    ),
    "padding": KindCases(
        solver=hs.masked_weights,
        example={"n_real": 2, "n_pad": 1},
        largest=({"n_real": 6, "n_pad": 2, "d_k": 8},),
    ),
}


def test_causal_kind_upper_triangle_is_zero_and_first_row_reads_itself(generate):
    _, g = generate("causal", n=4)
    w = np.array(g.solution["weights"])
    assert (np.triu(w, k=1) == 0).all()
    assert w[0, 0] == 1.0


def test_padding_kind_marks_padded_keys(generate):
    _, g = generate("padding", n_real=3, n_pad=2)
    assert g.inputs["padded"] == [False, False, False, True, True]
    w = np.array(g.solution["weights"])
    assert (w[:, 3:] == 0).all()
    np.testing.assert_allclose(w.sum(axis=1), 1)


@pytest.mark.parametrize("kind_name", list(CASES))
def test_a_weights_only_kind_gives_no_values(kind_name):
    kind = get_kind(kind_name)
    g = draw_variant(kind, kind.normalize_params({}), 0)
    assert "V" not in g.inputs
    assert "$V =" not in g.prompt and "values" not in g.prompt
    result = check_answers(
        asks=g.asks,
        solution=g.solution,
        answers=dict(g.solution),
        rtol=g.rtol,
        atol=g.atol,
        inputs=g.inputs,
        kind=kind,
    )
    assert result.correct
    # An exercise stored with values before is marked the same way.
    stored = {**g.inputs, "V": np.ones((len(g.inputs["Q"]), 2)).tolist()}
    np.testing.assert_array_equal(
        kind.answers_under(stored, {})["weights"], kind.answers_under(g.inputs, {})["weights"]
    )
